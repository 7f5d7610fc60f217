package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
)

// A call that the key-aware server answers from its own record, to a
// client ledger that never saw the key, says it was replayed by the server
// (and --json says replayed: true), not "SUCCEEDED after 1 attempt(s)".
func TestCallReplayedByServer(t *testing.T) {
	e := newE2E(t)
	args := []string{"--yes", "--key", "srv-1", "create_payment", "amount_cents=1250", "currency=EUR", "payee=acme"}
	e.call(nil, args...).wantExit(t, exitOK)
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	o := e.call(nil, append([]string{"--ledger", fresh}, args...)...)
	o.wantExit(t, exitOK)
	if !strings.Contains(o.stderr, "by the server") || !strings.Contains(o.stderr, "nothing ran again") || strings.Contains(o.stderr, "attempt(s)") {
		t.Errorf("stderr of a call the server replayed = %q; want it replayed by the server", o.stderr)
	}
	for _, line := range strings.Split(o.stderr, "\n") {
		if runewidth.StringWidth(line) > 80 {
			t.Errorf("the replay note has a line of %d columns in a pipe: %q", runewidth.StringWidth(line), line)
		}
	}
	fresh2 := filepath.Join(t.TempDir(), "fresh2.db")
	j := oneCall(t, e.call(nil, append([]string{"--json", "--ledger", fresh2}, args...)...))
	if !j.Replayed {
		t.Errorf("--json of a call the server replayed = %+v; want replayed true", j)
	}
	if n := e.paymentsFor("srv-1"); n != 1 {
		t.Errorf("payments for srv-1 = %d; want 1", n)
	}
}
