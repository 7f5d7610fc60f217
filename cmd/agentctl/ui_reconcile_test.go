package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// agentctl ui --reconcilers FILE: the file is private or refused, like the
// approvers' file; a report with one of its tokens settles an UNKNOWN
// record under the token's name; the token opens no page.
func TestUIReconcilers(t *testing.T) {
	e := newE2E(t)
	path := filepath.Join(e.dir, "ledger.db")
	seedLedger(t, path, time.Now(), seedRecord{tool: "create_payment", key: "u-1", state: ledger.StateUnknown})
	file := filepath.Join(e.dir, "reconcilers")
	const token = "webhook-token-0123456789"
	if err := os.WriteFile(file, []byte("# systems that report outcomes\n"+token+" payments-webhook\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	e.run(nil, "ui", "--reconcilers", file).wantExit(t, exitUsage, "--reconcilers", "mode 0640", "every reconciler's token", "chmod 600 "+file)
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(e.dir, "empty")
	if err := os.WriteFile(empty, []byte("# none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.run(nil, "ui", "--reconcilers", empty).wantExit(t, exitUsage, "names no reconciler")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.agentctl, "ui", "--reconcilers", file)
	cmd.Env = e.env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base, _, _ := strings.Cut(strings.TrimSpace(url), "?")
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+strings.TrimPrefix(path, "/"), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, _ := do("GET", "/unknown", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /unknown with a reconciler's token = %d; want 401: it opens no page", code)
	}
	code, body := do("POST", "/api/v1/reconcile", `{"tool":"create_payment","key":"u-1","outcome":"succeeded","evidence":"provider event evt_9"}`)
	if code != http.StatusOK || !strings.Contains(body, `"state":"SUCCEEDED"`) || !strings.Contains(body, `"by":"payments-webhook"`) {
		t.Fatalf("POST /api/v1/reconcile = %d %s; want 200, SUCCEEDED by payments-webhook", code, body)
	}
	rec := readRecord(t, path, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "u-1"})
	if rec.State != ledger.StateSucceeded || rec.Reconciled == nil || rec.Reconciled.By != "payments-webhook" || rec.Reconciled.Method != ledger.MethodCallback {
		t.Errorf("u-1 = %s %+v; want SUCCEEDED, reconciled by callback payments-webhook", rec.State, rec.Reconciled)
	}
}
