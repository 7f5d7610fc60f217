package aesgcm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/codec"
	"github.com/mcpledger/mcpledger/ledger/codec/aesgcm"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "aesgcm-example")
	defer os.RemoveAll(dir)

	// A key file as an operator writes it: head -c 32 /dev/urandom | base64.
	keyFile := filepath.Join(dir, "ledger.keys")
	os.WriteFile(keyFile, []byte("# the first key seals\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8= 2026-12\n"), 0o600)
	keys, err := aesgcm.LoadKeyFile(keyFile)
	if err != nil {
		fmt.Println(err)
		return
	}

	raw, _ := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), nil)
	defer raw.Close()
	st := codec.Wrap(raw, keys)

	id := ledger.ID{Tenant: "acme", Tool: "pay", Key: "order-1"}
	doc := json.RawMessage(`{"to":"bob","amount":100}`)
	fp, _ := args.Fingerprint(doc)
	st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Arguments: doc, Owner: "w"})
	st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "w", Fence: 1,
		Result: json.RawMessage(`{"content":[{"type":"text","text":"paid"}]}`)})

	stored, _ := raw.Get(ctx, id)
	sealed, _, _ := codec.SealedOf(stored.Result)
	fmt.Println("stored encrypted:", codec.IsEncrypted(stored.Arguments), codec.IsEncrypted(stored.Result), "with key", sealed.KeyID)

	r, _ := st.Get(ctx, id)
	fmt.Println("read back:", string(r.Arguments), string(r.Result))
	// Output:
	// stored encrypted: true true with key a90fbfabddc2f10b
	// read back: {"to":"bob","amount":100} {"content":[{"type":"text","text":"paid"}]}
}
