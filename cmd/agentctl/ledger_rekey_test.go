package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/codec/aesgcm"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// writeKeys writes a key file holding keys, the first one sealing.
func writeKeys(t *testing.T, path string, keys ...string) string {
	t.Helper()
	text := "# ledger keys: the first one seals\n" + strings.Join(keys, "\n") + "\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func randomKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

// atRest is every byte of the SQLite ledger: the file and its WAL.
func atRest(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	for _, suffix := range []string{"", "-wal", "-journal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

func TestLedgerKeyFile(t *testing.T) {
	e := newE2E(t)
	ledgerPath := filepath.Join(e.dir, "ledger.db")
	keyA, keyB := randomKey(t), randomKey(t)
	fileA := writeKeys(t, filepath.Join(e.dir, "a.keys"), keyA)
	withA := []string{"MCPLEDGER_LEDGER_KEY_FILE=" + fileA}
	const payee = "zebra-payee-3141"
	secrets := []string{"hunter2", "4eC39HqLyjWDarjtT1zdp7dc", "hunter2dsn"}
	pay := []string{"--yes", "--key", "order-1", "create_payment", "payee=" + payee, "amount_cents=500", "currency=EUR",
		"memo=password=hunter2 api_key=sk-live-4eC39HqLyjWDarjtT1zdp7dc dsn=postgres://u:hunter2dsn@h/db"}
	callArgs := append([]string{"--json", "call", "--server", e.server}, pay...)

	first := e.runEnv(nil, withA, callArgs...)
	first.wantExit(t, exitOK)
	raw := atRest(t, ledgerPath)
	for _, clear := range append([]string{payee, "pay_"}, secrets...) {
		if bytes.Contains(raw, []byte(clear)) {
			t.Fatalf("the ledger file holds %q in clear", clear)
		}
	}
	if !bytes.Contains(raw, []byte(`{"mcpledger/encrypted":1`)) {
		t.Fatalf("the ledger file holds no encrypted payload")
	}
	list := e.runEnv(nil, withA, "--json", "ledger", "list")
	list.wantExit(t, exitOK)
	if !strings.Contains(list.stdout, payee) || !strings.Contains(list.stdout, "[REDACTED]") {
		t.Fatalf("ledger list with the key = %s; want the redacted arguments opened", list.stdout)
	}
	// The payments tool echoes the memo in its result: call prints the
	// tool's answer as it came, the inspection commands redact it.
	show := e.runEnv(nil, withA, "ledger", "show", "order-1")
	show.wantExit(t, exitOK)
	for _, s := range secrets {
		for what, text := range map[string]string{"call stderr": first.stderr, "ledger list --json": list.stdout, "ledger show": show.stdout} {
			if strings.Contains(text, s) {
				t.Errorf("%s prints %q: %s", what, s, text)
			}
		}
	}

	// A repeat from a new process replays the stored, encrypted result.
	again := e.runEnv(nil, withA, callArgs...)
	again.wantExit(t, exitOK)
	r1, r2 := oneCall(t, first), oneCall(t, again)
	if !r2.Replayed || r1.Result == nil || r2.Result == nil || r2.Result.Content[0].Text != r1.Result.Content[0].Text {
		t.Fatalf("repeat = %+v; want a replay of %+v", r2, r1)
	}
	if n := e.paymentsFor("order-1"); n != 1 {
		t.Fatalf("%d payments for order-1; want 1", n)
	}

	// Without the key: listing works and says what it cannot show; a
	// read that needs the payload, and a repeat of the call, stop with
	// exit 2 and run nothing.
	list = e.run(nil, "--json", "ledger", "list")
	list.wantExit(t, exitOK)
	if !strings.Contains(list.stdout, `"arguments":"[encrypted]"`) || strings.Contains(list.stdout, payee) {
		t.Fatalf("ledger list without the key = %s; want [encrypted] arguments", list.stdout)
	}
	table := e.run(nil, "ledger", "list")
	table.wantExit(t, exitOK)
	if !strings.Contains(table.stdout, "order-1") || !strings.Contains(table.stderr, "1 records show [encrypted]") {
		t.Fatalf("ledger list without the key = %s / %s; want the record listed and a note on [encrypted]", table.stdout, table.stderr)
	}
	e.run(nil, "ledger", "show", "order-1", "--tool", "create_payment").wantExit(t, exitUsage, "no ledger key is configured", "key file")
	kidA := keyID(t, keyA)
	e.run(nil, append([]string{"call", "--server", e.server}, pay...)...).wantExit(t, exitUsage, "encrypted with key id "+kidA, "no ledger key is given", "nothing is written in clear")
	wrongKey := randomKey(t)
	withWrong := []string{"MCPLEDGER_LEDGER_KEY_FILE=" + writeKeys(t, filepath.Join(e.dir, "wrong.keys"), wrongKey)}
	e.runEnv(nil, withWrong, append([]string{"call", "--server", e.server}, pay...)...).
		wantExit(t, exitUsage, "encrypted with key id "+kidA, "holds key id(s) "+keyID(t, wrongKey)+" instead")
	// A wrong key is named as wrong in every command, never as missing.
	e.runEnv(nil, withWrong, "ledger", "show", "order-1").wantExit(t, exitUsage, "key id "+kidA, "does not hold", keyID(t, wrongKey))
	e.run(nil, "ledger", "show", "order-1").wantExit(t, exitUsage, "key id "+kidA, "no ledger key is configured")
	wl := e.runEnv(nil, withWrong, "ledger", "list")
	wl.wantExit(t, exitOK)
	if !strings.Contains(wl.stderr, "does not hold") || strings.Contains(wl.stderr, "pass --ledger-key-file") {
		t.Errorf("ledger list with the wrong key: stderr %q; want the key named as not matching", wl.stderr)
	}
	if n := e.paymentsFor("order-1"); n != 1 {
		t.Fatalf("%d payments for order-1 after calls without the key; want 1", n)
	}
	before := atRest(t, ledgerPath)
	e.runEnv(nil, withWrong, "ledger", "rekey").wantExit(t, exitUsage, "nothing was rewritten")
	if !bytes.Equal(atRest(t, ledgerPath), before) {
		t.Fatalf("a rekey with the wrong key changed the ledger file")
	}

	// A record stored in clear (by a build before keys, or before the
	// ledger held encrypted records), then rotation to key B.
	storeInClear(t, ledgerPath, "order-2", `{"payee":"plain-payee-2718","amount_cents":100,"currency":"EUR"}`)
	fileBA := writeKeys(t, filepath.Join(e.dir, "ba.keys"), keyB+" new", keyA+" old, until rekeyed")
	rekey := e.runEnv(nil, []string{"MCPLEDGER_LEDGER_KEY_FILE=" + fileBA}, "--json", "ledger", "rekey")
	rekey.wantExit(t, exitOK)
	if !strings.Contains(rekey.stdout, `"records":2`) || !strings.Contains(rekey.stdout, `"rewritten":2`) || !strings.Contains(rekey.stdout, `"plain":2`) {
		t.Fatalf("ledger rekey = %s; want 2 records rewritten, 2 payloads of them in clear", rekey.stdout)
	}
	if bytes.Contains(atRest(t, ledgerPath), []byte("plain-payee-2718")) {
		t.Fatalf("after rekey the ledger file still holds the clear record")
	}
	withB := []string{"--ledger-key-file", writeKeys(t, filepath.Join(e.dir, "b.keys"), keyB)}
	show = e.run(nil, append(withB, "ledger", "show", "order-1", "--tool", "create_payment")...)
	show.wantExit(t, exitOK)
	if !strings.Contains(show.stdout, payee) {
		t.Fatalf("ledger show with the new key alone = %s; want the record", show.stdout)
	}
	e.runEnv(nil, withA, "ledger", "show", "order-2", "--tool", "create_payment").wantExit(t, exitUsage, "does not hold")

	// A key file others may read works, with a warning.
	loose := writeKeys(t, filepath.Join(e.dir, "loose.keys"), keyB)
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	warned := e.run(nil, "--ledger-key-file", loose, "ledger", "list")
	warned.wantExit(t, exitOK)
	if !strings.Contains(warned.stderr, "may be read by other users (mode 0644)") {
		t.Fatalf("ledger list with a 0644 key file: stderr %q; want a warning", warned.stderr)
	}

	// A broken key file is bad input, and says which line.
	bad := writeKeys(t, filepath.Join(e.dir, "bad.keys"), keyB, "not-a-key!")
	e.run(nil, "--ledger-key-file", bad, "ledger", "list").wantExit(t, exitUsage, "--ledger-key-file", "line 3")
	e.run(nil, "ledger", "rekey").wantExit(t, exitUsage, "--ledger-key-file")
}

// TestErrorLineRedacted: the one error line never shows a secret the
// command line or a server put in the error's text.
func TestErrorLineRedacted(t *testing.T) {
	for _, args := range [][]string{
		{"--ledger", "postgresql://app:s3cretpw@127.0.0.1:1/app?connect_timeout=1", "ledger", "list"},
		{"--ledger", "postgresql://127.0.0.1:1/app?password=s3cretpw&connect_timeout=1", "ledger", "list"},
		{"call", "--url", "http://ann:s3cretpw@127.0.0.1:1/mcp", "--yes", "pay"},
	} {
		o := inProcess(t, map[string]string{"HOME": t.TempDir()}, nil, args...)
		if o.code == exitOK {
			t.Fatalf("agentctl %q succeeded; want an error", args)
		}
		if strings.Contains(o.stderr+o.stdout, "s3cretpw") {
			t.Errorf("agentctl %q printed the password: %s", args, o.stderr)
		}
	}
}

// keyID is the id of a base64 key as the ledger names it.
func keyID(t *testing.T, b64 string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	return aesgcm.KeyID(raw)
}

// storeInClear writes a settled record with plain arguments, as a ledger
// without a key would have.
func storeInClear(t *testing.T, path, key, args string) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "create_payment", Key: key}
	c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp-" + key, Arguments: json.RawMessage(args), Owner: "old-build"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "old-build", Fence: c.Record.Fence,
		Result: json.RawMessage(`{"content":[{"type":"text","text":"paid plain-payee-2718"}]}`)}); err != nil {
		t.Fatal(err)
	}
}
