package ledger_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

func TestClaimRequestValidate(t *testing.T) {
	ok := ledger.ClaimRequest{ID: ledger.ID{Tenant: "t", Tool: "pay", Key: "k"}, Fingerprint: "fp", Owner: "o"}
	for _, tc := range []struct {
		name    string
		edit    func(*ledger.ClaimRequest)
		wantErr bool
		is      error
	}{
		{"valid", func(*ledger.ClaimRequest) {}, false, nil},
		{"approval needs an owner too", func(r *ledger.ClaimRequest) { r.Owner, r.NeedsApproval = "", true }, true, nil},
		{"approval with an owner", func(r *ledger.ClaimRequest) { r.NeedsApproval = true }, false, nil},
		{"bad key", func(r *ledger.ClaimRequest) { r.Key = "a b" }, true, ledger.ErrInvalidKey},
		{"bad tenant", func(r *ledger.ClaimRequest) { r.Tenant = "" }, true, ledger.ErrInvalidTenant},
		{"no fingerprint", func(r *ledger.ClaimRequest) { r.Fingerprint = "" }, true, nil},
		{"no owner", func(r *ledger.ClaimRequest) { r.Owner = "" }, true, nil},
		{"unknown reuse policy", func(r *ledger.ClaimRequest) { r.ReusePolicy = "sometimes" }, true, nil},
		{"negative lease", func(r *ledger.ClaimRequest) { r.Lease = -time.Second }, true, nil},
		{"negative retention", func(r *ledger.ClaimRequest) { r.Retention = -time.Second }, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.edit(&r)
			err := r.Validate()
			if (err != nil) != tc.wantErr || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Validate(%+v) = %v; want error %v (%v)", r, err, tc.wantErr, tc.is)
			}
		})
	}
}

func TestClaimable(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	live, expired := now.Add(time.Second), now
	cases := []struct {
		name    string
		rec     ledger.Record
		fp      string
		want    bool
		because string
	}{
		{"retryable, same arguments", ledger.Record{State: ledger.StateRetryable, Fingerprint: "a", ExpiresAt: live}, "a", true, "nothing ran"},
		{"retryable, other arguments", ledger.Record{State: ledger.StateRetryable, Fingerprint: "a", ExpiresAt: live}, "b", false, "key reused"},
		{"rejected, same arguments", ledger.Record{State: ledger.StateRejected, Fingerprint: "a", ExpiresAt: live}, "a", true, "nothing ran"},
		{"rejected, other arguments", ledger.Record{State: ledger.StateRejected, Fingerprint: "a", ExpiresAt: live}, "b", true, "any arguments"},
		{"succeeded, live", ledger.Record{State: ledger.StateSucceeded, Fingerprint: "a", ExpiresAt: live}, "a", false, "replayed"},
		{"succeeded, expired", ledger.Record{State: ledger.StateSucceeded, Fingerprint: "a", ExpiresAt: expired}, "b", true, "reexecute"},
		{"denied, expired", ledger.Record{State: ledger.StateDenied, Fingerprint: "a", ExpiresAt: expired}, "a", true, "reexecute"},
		{"tombstone, expired", ledger.Record{State: ledger.StateSucceeded, Fingerprint: "a", ExpiresAt: expired, Tombstone: true}, "a", false, "verify"},
		{"rejected tombstone", ledger.Record{State: ledger.StateRejected, Fingerprint: "a", ExpiresAt: live, Tombstone: true}, "a", false, "verify"},
		{"unknown, expired", ledger.Record{State: ledger.StateUnknown, Fingerprint: "a", ExpiresAt: expired}, "a", false, "reconcile first"},
		{"processing, expired", ledger.Record{State: ledger.StateProcessing, Fingerprint: "a", ExpiresAt: expired}, "a", false, "an owner holds it"},
		{"pending approval", ledger.Record{State: ledger.StatePendingApproval, Fingerprint: "a", ExpiresAt: expired}, "a", false, "an owner holds it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ledger.Claimable(&tc.rec, tc.fp, now); got != tc.want {
				t.Errorf("Claimable(%s, %q) = %v; want %v (%s)", tc.rec.State, tc.fp, got, tc.want, tc.because)
			}
		})
	}
}

func TestFollow(t *testing.T) {
	rec := &ledger.Record{ID: ledger.ID{Tenant: "t", Tool: "pay", Key: "k"}, Fingerprint: "aaaaaaaaaaaaaaaa", State: ledger.StateSucceeded}
	req := ledger.ClaimRequest{ID: rec.ID, Fingerprint: rec.Fingerprint, Owner: "o"}
	c, err := ledger.Follow("teststore", rec, req)
	if err != nil || c.Won || c.Record != rec {
		t.Errorf("Follow(same fingerprint) = {Won: %v, Record: %p}, %v; want a follower of %p", c.Won, c.Record, err, rec)
	}
	req.Fingerprint = "bbbbbbbbbbbbbbbb"
	c, err = ledger.Follow("teststore", rec, req)
	if !errors.Is(err, ledger.ErrKeyReused) || c.Won || c.Record != rec {
		t.Fatalf("Follow(other fingerprint) = {Won: %v, Record: %p}, %v; want the record and ErrKeyReused", c.Won, c.Record, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "teststore: ") || strings.Contains(msg, "\n") {
		t.Errorf("Follow error = %q; want one line naming the store", msg)
	}
}

func TestMismatch(t *testing.T) {
	id := ledger.ID{Tenant: "t", Tool: "pay", Key: "k"}
	cur := func(st ledger.State, owner string, fence int64) *ledger.Record {
		return &ledger.Record{ID: id, State: st, Owner: owner, Fence: fence}
	}
	P, U, S := ledger.StateProcessing, ledger.StateUnknown, ledger.StateSucceeded
	cases := []struct {
		name string
		t    ledger.Transition
		cur  *ledger.Record
		want error
		says string
	}{
		{"stale fence", ledger.Transition{ID: id, From: P, To: S, Owner: "a", Fence: 1}, cur(P, "a", 2), ledger.ErrLeaseLost, "fence 1 is stale"},
		{"other owner", ledger.Transition{ID: id, From: P, To: S, Owner: "a", Fence: 2}, cur(P, "b", 2), ledger.ErrLeaseLost, `belongs to "b"`},
		{"lease ended", ledger.Transition{ID: id, From: P, To: S, Owner: "a", Fence: 2}, cur(U, "a", 2), ledger.ErrLeaseLost, "now UNKNOWN"},
		{"fenced late result, taken over", ledger.Transition{ID: id, From: U, To: S, Owner: "a", Fence: 1}, cur(P, "b", 2), ledger.ErrLeaseLost, "now PROCESSING"},
		{"fenced late result, stale", ledger.Transition{ID: id, From: U, To: S, Owner: "a", Fence: 1}, cur(U, "b", 2), ledger.ErrLeaseLost, "fence 1 is stale"},
		{"reconciliation, already settled", ledger.Transition{ID: id, From: U, To: S}, cur(S, "a", 1), ledger.ErrStateChanged, "is SUCCEEDED"},
		{"leased, tombstone", ledger.Transition{ID: id, From: P, To: S, Owner: "a", Fence: 1}, &ledger.Record{ID: id, State: S, Tombstone: true}, ledger.ErrLeaseLost, "tombstone"},
		{"reconciliation, tombstone", ledger.Transition{ID: id, From: U, To: S}, &ledger.Record{ID: id, State: S, Tombstone: true}, ledger.ErrStateChanged, "tombstone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ledger.Mismatch("teststore", tc.t, tc.cur)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) || !strings.HasPrefix(err.Error(), "teststore: ") {
				t.Errorf("Mismatch = %v; want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

func TestEventValidate(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ok := ledger.Event{Tenant: "t", Tool: "pay", Side: ledger.SideClient, Outcome: "executed", At: at}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v; want nil", ok, err)
	}
	for _, tc := range []struct {
		name string
		edit func(*ledger.Event)
	}{
		{"bad tenant", func(e *ledger.Event) { e.Tenant = "a/b" }},
		{"unknown side", func(e *ledger.Event) { e.Side = "middle" }},
		{"no tool", func(e *ledger.Event) { e.Tool = "" }},
		{"no outcome", func(e *ledger.Event) { e.Outcome = "" }},
		{"no time", func(e *ledger.Event) { e.At = time.Time{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ok
			tc.edit(&e)
			if err := e.Validate(); err == nil {
				t.Errorf("Validate(%+v) = nil; want an error", e)
			}
		})
	}
}
