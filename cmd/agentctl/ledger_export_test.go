package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func TestLedgerExport(t *testing.T) {
	path, env := ledgerEnv(t)
	now := time.Now().UTC()
	auditSeed(t, path, now.Add(-3*time.Hour), "default", "old-1", ledger.StateSucceeded)
	auditSeed(t, path, now.Add(-time.Minute), "default", "new-1", ledger.StateUnknown)
	auditSeed(t, path, now.Add(-time.Minute), "default", "new-2", ledger.StateDenied)
	auditSeed(t, path, now.Add(-time.Minute), "other", "theirs", ledger.StateSucceeded)

	o := inProcess(t, env, nil, "ledger", "export")
	o.wantExit(t, exitOK)
	if n := strings.Count(o.stdout, "\n"); n != 5 {
		t.Fatalf("export printed %d lines; want header, 3 records, end:\n%s", n, o.stdout)
	}
	if strings.Contains(o.stdout, "theirs") || strings.Contains(o.stdout, "tok_visa") || !strings.Contains(o.stderr, "exported 3 record(s) of tenant default") {
		t.Errorf("export crossed tenants, kept a secret, or did not say what it wrote: %s", o.stderr)
	}
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(file, []byte(o.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	v := inProcess(t, env, nil, "ledger", "export", "--verify", file)
	v.wantExit(t, exitOK)
	if !strings.Contains(v.stdout, "chain consistent, unsigned: 3 record(s) of tenant default in 5 lines") || strings.Contains(v.stdout, "intact") {
		t.Errorf("verify said %q; want chain consistent, unsigned (never intact), with the counts", v.stdout)
	}
	since := inProcess(t, env, nil, "ledger", "export", "--since", "1h")
	since.wantExit(t, exitOK)
	if strings.Contains(since.stdout, "old-1") || !strings.Contains(since.stdout, "new-1") {
		t.Errorf("export --since 1h:\n%s\nwant new-1 and new-2 only", since.stdout)
	}

	// A person edits the denied record's line: verify names it and exits 1.
	lines := strings.SplitAfter(o.stdout, "\n")
	for i, l := range lines {
		if strings.Contains(l, `"key":"new-2"`) {
			lines[i] = strings.Replace(l, `"DENIED"`, `"SUCCEEDED"`, 1)
			if err := os.WriteFile(file, []byte(strings.Join(lines, "")), 0o600); err != nil {
				t.Fatal(err)
			}
			bad := inProcess(t, env, nil, "ledger", "export", "--verify", file)
			bad.wantExit(t, exitFailed, "is not intact", "line "+strconv.Itoa(i+1)+":", "was changed")
			js := inProcess(t, env, nil, "--json", "ledger", "export", "--verify", file)
			first, _, _ := strings.Cut(js.stdout, "\n") // an error object may follow
			if got := jsonLines[exportVerified](t, first+"\n"); len(got) != 1 || got[0].Intact || got[0].Line != int64(i+1) {
				t.Errorf("--json verify = %+v; want not intact at line %d", got, i+1)
			}
		}
	}

	for _, tc := range []struct {
		args  []string
		hints []string
	}{
		{[]string{"ledger", "export", "--format", "csv"}, []string{"--format", "jsonl"}},
		{[]string{"ledger", "export", "--since", "soon"}, []string{"--since"}},
		{[]string{"ledger", "export", "--verify", filepath.Join(t.TempDir(), "missing.jsonl")}, []string{"cannot read"}},
		{[]string{"ledger", "export", "--verify", file, "--since", "1h"}, []string{"takes no --since"}},
	} {
		inProcess(t, env, nil, tc.args...).wantExit(t, exitUsage, tc.hints...)
	}
}

// auditSeed leaves one record of create_payment in state at the ledger at
// path, its times taken from at.
func auditSeed(t *testing.T, path string, at time.Time, tenant, key string, state ledger.State) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, &sqlite.Options{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := ledger.ID{Layer: ledger.LayerClient, Tenant: tenant, Tool: "create_payment", Key: key}
	c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "f-" + key, Arguments: json.RawMessage(`{"amount_cents":1250,"card_token":"tok_visa"}`),
		Owner: "seed", NeedsApproval: state == ledger.StateDenied})
	if err != nil {
		t.Fatal(err)
	}
	tr := ledger.Transition{ID: id, From: c.Record.State, To: state, Owner: "seed", Fence: c.Record.Fence, AddAttempts: 1}
	switch state {
	case ledger.StateSucceeded:
		tr.Result = json.RawMessage(`{"content":[{"type":"text","text":"paid"}]}`)
	case ledger.StateUnknown:
		tr.ErrorKind, tr.ErrorMessage = "ambiguous", "connection dropped after send"
	case ledger.StateDenied:
		tr.AddAttempts, tr.Approval = 0, &ledger.Approval{Decision: ledger.DecisionDenied, By: "ops", At: at, Reason: "too much"}
	}
	if _, err := st.Transition(ctx, tr); err != nil {
		t.Fatal(err)
	}
}

// A signed export verifies as intact with its public key; the same export
// edited and re-chained by a short script (as anyone without the key can)
// keeps a consistent chain and fails --verify --pub; so does an export
// whose signature line was dropped.
func TestLedgerExportSigned(t *testing.T) {
	path, env := ledgerEnv(t)
	now := time.Now().UTC()
	auditSeed(t, path, now.Add(-time.Minute), "default", "pay-1", ledger.StateSucceeded)
	auditSeed(t, path, now.Add(-time.Minute), "default", "pay-2", ledger.StateDenied)
	dir := t.TempDir()
	key := filepath.Join(dir, "audit.key")
	kg := inProcess(t, env, nil, "ledger", "keygen", key)
	kg.wantExit(t, exitOK)
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 || !strings.Contains(kg.stdout, key+".pub") {
		t.Fatalf("keygen = %q, key file %v, %v; want a 0600 private key and its .pub", kg.stdout, fi, err)
	}
	inProcess(t, env, nil, "ledger", "keygen", key).wantExit(t, exitUsage, "does not exist yet")

	o := inProcess(t, env, nil, "ledger", "export", "--sign", key)
	o.wantExit(t, exitOK)
	if !strings.Contains(o.stderr, "signed by key") {
		t.Errorf("export --sign said %q; want the signing key named", o.stderr)
	}
	file := filepath.Join(dir, "audit.jsonl")
	write := func(b string) {
		if err := os.WriteFile(file, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(o.stdout)
	good := inProcess(t, env, nil, "ledger", "export", "--verify", file, "--pub", key+".pub")
	good.wantExit(t, exitOK)
	if !strings.Contains(good.stdout, "intact: signed by key") {
		t.Errorf("verify --pub said %q; want intact, signed", good.stdout)
	}
	if v := inProcess(t, env, nil, "ledger", "export", "--verify", file); !strings.Contains(v.stdout, "chain consistent, signed by key") || strings.Contains(v.stdout, "intact") {
		t.Errorf("verify without --pub said %q; want chain consistent, signature not checked", v.stdout)
	}

	// The forger turns the denial into a success and re-chains the file.
	var forged strings.Builder
	prev := ""
	for line := range strings.Lines(o.stdout) {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if rec, ok := l["record"].(map[string]any); ok && rec["key"] == "pay-2" {
			rec["state"] = "SUCCEEDED"
		}
		l["prev"] = prev
		if sig, ok := l["signature"].(map[string]any); ok {
			sig["head"] = prev
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		prev = hex.EncodeToString(sum[:])
		forged.Write(append(b, '\n'))
	}
	write(forged.String())
	inProcess(t, env, nil, "ledger", "export", "--verify", file).wantExit(t, exitOK)
	inProcess(t, env, nil, "ledger", "export", "--verify", file, "--pub", key+".pub").
		wantExit(t, exitFailed, "is not intact", "the signature does not hold")
	js := inProcess(t, env, nil, "--json", "ledger", "export", "--verify", file, "--pub", key+".pub")
	first, _, _ := strings.Cut(js.stdout, "\n")
	if got := jsonLines[exportVerified](t, first+"\n"); len(got) != 1 || got[0].Intact || !got[0].Chain || !got[0].Signed {
		t.Errorf("--json verify of the forgery = %+v; want chain consistent, signed, not intact", got)
	}

	// Without its signature line the export is unsigned.
	lines := strings.SplitAfter(o.stdout, "\n")
	write(strings.Join(lines[:len(lines)-2], ""))
	inProcess(t, env, nil, "ledger", "export", "--verify", file, "--pub", key+".pub").wantExit(t, exitFailed, "not signed")
	inProcess(t, env, nil, "ledger", "export", "--pub", key+".pub").wantExit(t, exitUsage, "--verify FILE")
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	inProcess(t, env, nil, "ledger", "export", "--sign", key).wantExit(t, exitUsage, "chmod 600")
}
