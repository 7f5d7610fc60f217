package main

import (
	"bufio"
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// agentctl ui --approvers FILE: a file others may read is refused; each
// token lets its own person in, named on what they decide, and reaches
// only its tenants.
func TestUIApprovers(t *testing.T) {
	e := newE2E(t)
	path := filepath.Join(e.dir, "ledger.db")
	seedLedger(t, path, time.Now(), seedRecord{tool: "create_payment", key: "q-1", state: ledger.StatePendingApproval},
		seedRecord{tenant: "t2", tool: "create_payment", key: "q-2", state: ledger.StatePendingApproval})
	file := filepath.Join(e.dir, "approvers")
	if err := os.WriteFile(file, []byte("# who may decide\nana-token-0123456789 ana\nbob-token-0123456789 bob default,t2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.run(nil, "ui", "--approvers", file).wantExit(t, exitUsage, "mode 0644", "chmod 600 "+file)
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(e.dir, "short")
	if err := os.WriteFile(bad, []byte("abc ana\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.run(nil, "ui", "--approvers", bad).wantExit(t, exitUsage, "too easy to guess")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.agentctl, "ui", "--approvers", file)
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
	url = strings.TrimSpace(url)
	if strings.Contains(url, "token=") {
		t.Errorf("the printed URL %s holds a token; with --approvers each person brings their own", url)
	}
	get := func(token, path string) (int, string) {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		resp, err := c.Get(url + strings.TrimPrefix(path, "/") + sep(path) + "token=" + token)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("ana-token-0123456789", "/approvals"); code != 200 || !strings.Contains(body, "q-1") {
		t.Errorf("ana's approvals = %d; want 200 with q-1: %s", code, body)
	}
	if code, body := get("ana-token-0123456789", "/approvals?tenant=t2"); code != 403 || strings.Contains(body, "q-2") {
		t.Errorf("ana's approvals of t2 = %d %q; want 403", code, body)
	}
	if code, body := get("bob-token-0123456789", "/approvals?tenant=t2"); code != 200 || !strings.Contains(body, "q-2") {
		t.Errorf("bob's approvals of t2 = %d; want 200 with q-2: %s", code, body)
	}
	if code, _ := get("not-a-token-at-all", "/"); code != 401 {
		t.Errorf("a wrong token = %d; want 401", code)
	}
}

func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

// Alone, agentctl ui prints a URL with the one token, and what is decided
// in the console is recorded under the OS account, whatever USER says.
func TestUIAloneRecordsTheOSAccount(t *testing.T) {
	e := newE2E(t)
	path := filepath.Join(e.dir, "ledger.db")
	seedLedger(t, path, time.Now(), seedRecord{tool: "create_payment", key: "q-1", state: ledger.StatePendingApproval})
	// seedLedger's queued record is held by a prompt's owner: make it a
	// queued call a person decides.
	queueIt(t, path, "q-1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.agentctl, "ui")
	cmd.Env = append(append([]string{}, e.env...), "USER=mallory")
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
	url = strings.TrimSpace(url)
	base, _, _ := strings.Cut(url, "?")
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(strings.Replace(url, "/?", "/approvals?", 1))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("approvals page = %d without a form: %s", resp.StatusCode, page)
	}
	form := neturl.Values{"csrf": {string(m[1])}, "tenant": {"default"}, "layer": {"client"}, "tool": {"create_payment"}, "key": {"q-1"}, "reason": {"checked"}}
	req, err := http.NewRequest(http.MethodPost, base+"approve", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err = c.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := readRecord(t, path, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "q-1"})
	if ap := r.Approval; ap == nil || ap.By != osAccount() || ap.Via != "console" {
		t.Errorf("q-1 approval = %+v; want by %s in the console (not mallory)", r.Approval, osAccount())
	}
}

// queueIt makes the PENDING_APPROVAL record key a queued call (its owner
// the queue's, as a policy's "queue" leaves it).
func queueIt(t *testing.T, path, key string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE records SET owner = ? WHERE key = ?`, ledger.QueueOwner(false, "v1", "agent"), key); err != nil {
		t.Fatal(err)
	}
}
