package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/audit"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/redact"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// pages is a small fake Lister: it serves records newest first in pages of
// size, with the same cursor rules a Store has.
type pages struct {
	records []*ledger.Record
	size    int
	calls   int
}

func (p *pages) List(_ context.Context, f ledger.Filter) (ledger.Page, error) {
	p.calls++
	start := 0
	if f.Cursor != "" {
		if _, err := fmt.Sscan(f.Cursor, &start); err != nil {
			return ledger.Page{}, err
		}
	}
	var kept []*ledger.Record
	for _, r := range p.records {
		if r.Tenant == f.Tenant && !r.CreatedAt.Before(f.Since) {
			kept = append(kept, r)
		}
	}
	end := min(start+p.size, len(kept))
	pg := ledger.Page{Records: kept[start:end]}
	if end < len(kept) {
		pg.Next = fmt.Sprint(end)
	}
	return pg, nil
}

func records(n int) []*ledger.Record {
	base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	out := make([]*ledger.Record, n)
	for i := range out {
		at := base.Add(-time.Duration(i) * time.Minute)
		out[i] = &ledger.Record{
			ID:          ledger.ID{Tenant: "acme", Tool: "create_payment", Key: fmt.Sprintf("order-%d", i)},
			Fingerprint: "fp", State: ledger.StateSucceeded, Attempts: 1, Fence: 1,
			Arguments: json.RawMessage(fmt.Sprintf(`{"amount":%d,"api_key":"sk-live-%d"}`, 100+i, i)),
			Result:    json.RawMessage(`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"id":"p1","token":"tok-secret"}}`),
			Approval:  &ledger.Approval{Decision: ledger.DecisionApproved, By: "ops", At: at.Add(time.Second), Reason: "checked"},
			CreatedAt: at, UpdatedAt: at.Add(2 * time.Second), ExpiresAt: at.Add(24 * time.Hour),
		}
	}
	return out
}

func export(t *testing.T, st audit.Lister, o audit.Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := audit.Export(context.Background(), st, &buf, o); err != nil {
		t.Fatalf("Export: %v", err)
	}
	return buf.Bytes()
}

func TestExportIsIntactAndRedacted(t *testing.T) {
	st := &pages{records: records(7), size: 3}
	out := export(t, st, audit.Options{Tenant: "acme"})
	if st.calls != 3 {
		t.Errorf("List called %d times; want 3 pages of at most 3", st.calls)
	}
	rep, err := audit.Verify(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("Verify(fresh export) = %v; want intact", err)
	}
	if rep.Records != 7 || rep.Lines != 9 || rep.Header.Tenant != "acme" || len(rep.Head) != 64 {
		t.Errorf("Verify = %+v; want 7 records, 9 lines, tenant acme, a SHA-256 head", rep)
	}
	if bytes.Contains(out, []byte("sk-live")) || bytes.Contains(out, []byte("tok-secret")) {
		t.Errorf("export holds a secret value:\n%s", out)
	}
	if !bytes.Contains(out, []byte(redact.Placeholder)) || !bytes.Contains(out, []byte(`"amount":100`)) {
		t.Errorf("export lost the redaction marker or the business arguments:\n%s", out)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	var second audit.Line
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if second.Record == nil || second.Record.Key != "order-0" || len(second.Timeline) < 3 {
		t.Errorf("line 2 = %+v; want the newest record with its timeline (claimed, approval, state)", second)
	}
}

func TestExportSince(t *testing.T) {
	st := &pages{records: records(10), size: 1000}
	since := time.Date(2026, 12, 1, 8, 57, 0, 0, time.UTC) // keeps order-0 .. order-3
	rep, err := audit.Verify(bytes.NewReader(export(t, st, audit.Options{Tenant: "acme", Since: since})))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 4 || !rep.Header.Since.Equal(since) {
		t.Errorf("Verify = %+v; want 4 records since %v", rep, since)
	}
}

func TestVerifyNamesTheChangedLine(t *testing.T) {
	out := string(export(t, &pages{records: records(5), size: 2}, audit.Options{Tenant: "acme"}))
	lines := strings.SplitAfter(out, "\n")
	lines = lines[:len(lines)-1] // the empty piece after the last newline
	join := func(ls []string) string { return strings.Join(ls, "") }
	edit := func(i int, old, new string) string {
		c := append([]string(nil), lines...)
		if !strings.Contains(c[i], old) {
			t.Fatalf("line %d has no %q: %s", i+1, old, c[i])
		}
		c[i] = strings.Replace(c[i], old, new, 1)
		return join(c)
	}
	without := func(i int) string {
		c := append([]string(nil), lines[:i]...)
		return join(append(c, lines[i+1:]...))
	}
	swapped := func(i int) string {
		c := append([]string(nil), lines...)
		c[i], c[i+1] = c[i+1], c[i]
		return join(c)
	}
	for _, tc := range []struct {
		name string
		file string
		line int64
	}{
		{"amount changed on line 3", edit(2, `"amount":101`, `"amount":901`), 3},
		{"state changed on line 5", edit(4, `"SUCCEEDED"`, `"FAILED"`), 5},
		{"approver changed on line 2", edit(1, `"by":"ops"`, `"by":"eve"`), 2},
		{"header tenant changed", edit(0, `"tenant":"acme"`, `"tenant":"evil"`), 1},
		{"line 4 removed", without(3), 4},
		{"lines 3 and 4 swapped", swapped(2), 3},
		{"end line removed", without(len(lines) - 1), int64(len(lines))},
		{"end count changed", edit(len(lines)-1, `"records":5`, `"records":4`), int64(len(lines))},
		{"line 3 not JSON", edit(2, `{`, `#`), 3},
		{"a line added after the end", join(lines) + lines[1], int64(len(lines) + 1)},
		{"empty file", "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := audit.Verify(strings.NewReader(tc.file))
			var b *audit.Broken
			if !errors.As(err, &b) || !errors.Is(err, audit.ErrBroken) {
				t.Fatalf("Verify = %v; want a *Broken", err)
			}
			if b.Line != tc.line {
				t.Errorf("Verify names line %d (%s); want line %d", b.Line, b.Why, tc.line)
			}
		})
	}
}

func TestTimeline(t *testing.T) {
	r := records(1)[0]
	r.State, r.ErrorKind, r.ErrorMessage, r.Attempts, r.Fence = ledger.StateFailed, "reconciled", "seen in the bank", 2, 3
	tl := audit.Timeline(r)
	want := []string{"claimed (key taken over since: fence 3)", "approved by ops", "FAILED after 2 attempt(s)", "retention ends"}
	if len(tl) != len(want) {
		t.Fatalf("Timeline = %+v; want %d entries", tl, len(want))
	}
	for i, w := range want {
		if tl[i].What != w {
			t.Errorf("Timeline[%d].What = %q; want %q", i, tl[i].What, w)
		}
	}
	if tl[2].Detail != "reconciled: seen in the bank" || tl[1].Detail != "checked" {
		t.Errorf("Timeline details = %q, %q; want the reason and the error", tl[1].Detail, tl[2].Detail)
	}
}

// A record's reconciliation attempts join its timeline at their times,
// and an UNKNOWN record says when the next is due.
func TestTimelineFindings(t *testing.T) {
	r := records(1)[0]
	r.Approval = nil
	became := r.UpdatedAt
	r.State, r.Attempts, r.Fence = ledger.StateUnknown, 1, 1
	r.Findings = []ledger.Resolution{
		{Verdict: ledger.VerdictUnknown, Method: ledger.MethodProbe, By: "find_payment", At: became.Add(time.Second), Evidence: "timed out"},
		{Verdict: ledger.VerdictUnknown, Method: ledger.MethodProbe, By: "find_payment", At: became.Add(7 * time.Second), Evidence: "timed out again"},
	}
	r.FindingCount, r.ReconcileAt = 2, became.Add(17*time.Second)
	tl := audit.Timeline(r)
	want := []string{"claimed", "UNKNOWN after 1 attempt(s)", "reconcile: unknown by probe (find_payment)", "reconcile: unknown by probe (find_payment)", "next reconcile attempt due"}
	if len(tl) != len(want) {
		t.Fatalf("Timeline = %+v; want %d entries", tl, len(want))
	}
	for i, w := range want {
		if tl[i].What != w {
			t.Errorf("Timeline[%d].What = %q; want %q", i, tl[i].What, w)
		}
	}
	if tl[3].Detail != "timed out again" || !tl[4].At.Equal(r.ReconcileAt) {
		t.Errorf("Timeline = %+v; want the evidence and the due time", tl)
	}

	// Settled by a finding: it stands before the state it made.
	r.State, r.UpdatedAt = ledger.StateSucceeded, became.Add(9*time.Second)
	r.Findings = append(r.Findings, ledger.Resolution{Verdict: ledger.VerdictFound, Method: ledger.MethodCallback, By: "bank", At: r.UpdatedAt})
	r.Reconciled = &r.Findings[2]
	tl = audit.Timeline(r)
	if n := len(tl); n < 3 || tl[n-3].What != "reconcile: found by callback (bank)" || tl[n-2].What != "SUCCEEDED after 1 attempt(s)" || tl[n-1].What != "retention ends" {
		t.Errorf("Timeline of a reconciled record = %+v; want the finding, then SUCCEEDED, then retention", tl)
	}
}

// An export of a real ledger, on both stores, verifies.
func TestExportRealLedger(t *testing.T) {
	stores := map[string]func(t *testing.T) ledger.Store{
		"sqlite": func(t *testing.T) ledger.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) ledger.Store {
			st, err := postgres.Open(context.Background(), pgtest.Schema(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			ctx := context.Background()
			for i := range 3 {
				id := ledger.ID{Tenant: "acme", Tool: "create_payment", Key: fmt.Sprintf("k-%d", i)}
				c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "f", Arguments: json.RawMessage(`{"password":"hunter2","amount":5}`), Owner: "w"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "w", Fence: c.Record.Fence,
					Result: json.RawMessage(`{"content":[]}`), AddAttempts: 1}); err != nil {
					t.Fatal(err)
				}
			}
			var buf bytes.Buffer
			n, err := audit.Export(ctx, st, &buf, audit.Options{Tenant: "acme"})
			if err != nil || n != 3 {
				t.Fatalf("Export = %d, %v; want 3 records", n, err)
			}
			if bytes.Contains(buf.Bytes(), []byte("hunter2")) {
				t.Errorf("the export holds a password")
			}
			rep, err := audit.Verify(&buf)
			if err != nil || rep.Records != 3 {
				t.Fatalf("Verify = %+v, %v; want 3 records intact", rep, err)
			}
		})
	}
}
