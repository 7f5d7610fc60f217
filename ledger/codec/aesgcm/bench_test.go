package aesgcm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/codec"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// BenchmarkSealOpen is the cost encryption adds to one stored payload and
// its replay.
func BenchmarkSealOpen(b *testing.B) {
	ctx := context.Background()
	k := keyring(b, newKey(b))
	for _, size := range []int{1 << 10, 1 << 20} {
		plain := bytes.Repeat([]byte("x"), size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				s, err := k.Encode(ctx, rec, codec.FieldResult, plain)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := k.Decode(ctx, rec, codec.FieldResult, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStoreRoundTrip is one operation's claim, result and replay read
// on a SQLite ledger, in clear and encrypted.
func BenchmarkStoreRoundTrip(b *testing.B) {
	ctx := context.Background()
	doc := json.RawMessage(`{"customer":"cus_123","amount":4200,"currency":"EUR","note":"order 42"}`)
	fp, _ := args.Fingerprint(doc)
	res := json.RawMessage(`{"content":[{"type":"text","text":"payment pay_123: 42.00 EUR"}],"structuredContent":{"id":"pay_123"}}`)
	for _, sealed := range []bool{false, true} {
		b.Run(map[bool]string{false: "clear", true: "encrypted"}[sealed], func(b *testing.B) {
			raw, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "ledger.db"), &sqlite.Options{Synchronous: sqlite.SyncNormal})
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			st := ledger.Store(raw)
			if sealed {
				st = codec.Wrap(raw, keyring(b, newKey(b)))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				id := ledger.ID{Tenant: "acme", Tool: "pay", Key: fmt.Sprintf("k-%d", i)}
				if _, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Arguments: doc, Owner: "w"}); err != nil {
					b.Fatal(err)
				}
				if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "w", Fence: 1, Result: res}); err != nil {
					b.Fatal(err)
				}
				if _, err := st.Get(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
