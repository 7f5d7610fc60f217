package ledgertest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

func testTenant(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := req("shared", "owner-a")
	b := req("shared", "owner-b")
	b.Tenant = "tenant-b"
	b.Fingerprint = fp("b's own arguments")
	recA, recB := e.mustClaim(a), e.mustClaim(b)
	if recA.Tenant != tenant || recB.Tenant != "tenant-b" {
		t.Fatalf("claims of one key under two tenants = %q and %q; want two records", recA.Tenant, recB.Tenant)
	}
	only := req("only-a", "owner-a")
	onlyRec := e.mustClaim(only)
	other := only.ID
	other.Tenant = "tenant-b"

	t.Run("Get", func(t *testing.T) {
		if got := e.mustGet(b.ID); got.Fingerprint != b.Fingerprint || got.Owner != "owner-b" {
			t.Errorf("Get(tenant-b) = fingerprint %.12s owner %q; want tenant-b's own record", got.Fingerprint, got.Owner)
		}
		if got := e.mustGet(a.ID); got.Fingerprint != a.Fingerprint || got.Owner != "owner-a" {
			t.Errorf("Get(tenant-a) = fingerprint %.12s owner %q; want tenant-a's own record", got.Fingerprint, got.Owner)
		}
		if _, err := e.st.Get(e.ctx, other); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Get(%q) under another tenant = %v; want ErrNotFound", other.Key, err)
		}
	})
	t.Run("Writes", func(t *testing.T) {
		_, err := e.st.Transition(e.ctx, ledger.Transition{ID: other, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "owner-a", Fence: onlyRec.Fence})
		if !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Transition(%q) under another tenant = %v; want ErrNotFound", other.Key, err)
		}
		if err := e.st.Renew(e.ctx, ledger.Lease{ID: other, Owner: "owner-a", Fence: onlyRec.Fence}, time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("Renew(%q) under another tenant = %v; want ErrLeaseLost", other.Key, err)
		}
		if got := e.mustGet(only.ID); got.State != ledger.StateProcessing {
			t.Errorf("tenant-a's record is %s after tenant-b's writes; want PROCESSING", got.State)
		}
	})
	t.Run("Wait", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(e.ctx, waitBound)
		defer cancel()
		if _, err := e.st.Wait(ctx, other); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Wait(%q) under another tenant = %v; want ErrNotFound", other.Key, err)
		}
	})
	t.Run("List", func(t *testing.T) {
		p, err := e.st.List(e.ctx, ledger.Filter{Tenant: "tenant-b"})
		if err != nil {
			t.Fatalf("List(tenant-b) = %v", err)
		}
		if got, want := keys(p.Records), []string{"tenant-b/" + tool + "/shared"}; !slices.Equal(got, want) {
			t.Errorf("List(tenant-b) = %v; want %v", got, want)
		}
		p, err = e.st.List(e.ctx, ledger.Filter{Tenant: "tenant-c"})
		if err != nil || len(p.Records) != 0 || p.Next != "" {
			t.Errorf("List(tenant-c) = %v, next %q, %v; want an empty page", keys(p.Records), p.Next, err)
		}
		if _, err := e.st.List(e.ctx, ledger.Filter{}); !errors.Is(err, ledger.ErrInvalidTenant) {
			t.Errorf("List without a tenant = %v; want ErrInvalidTenant", err)
		}
	})
	t.Run("FindRecent", func(t *testing.T) {
		got, err := e.st.FindRecent(e.ctx, ledger.RecentQuery{Tenant: "tenant-b", Session: only.Session, Tool: tool,
			Fingerprint: only.Fingerprint, Since: Start.Add(-time.Hour)})
		if err != nil || len(got) != 0 {
			t.Errorf("FindRecent(tenant-b, tenant-a's call) = %v, %v; want nothing", keys(got), err)
		}
	})
}

func testRecent(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	base := e.clock.Now()
	claim := func(key string, at time.Duration, edit func(*ledger.ClaimRequest)) {
		e.clock.Set(base.Add(at))
		r := req(key, "owner-1")
		r.Session = "s1"
		if edit != nil {
			edit(&r)
		}
		e.mustClaim(r)
	}
	claim("k0", 0, nil)
	claim("k1", time.Minute, nil)
	claim("k2", 2*time.Minute, nil)
	claim("k2b", 2*time.Minute, nil) // same instant: key breaks the tie
	claim("other-session", time.Minute, func(r *ledger.ClaimRequest) { r.Session = "s2" })
	claim("other-tool", time.Minute, func(r *ledger.ClaimRequest) { r.Tool = "send_mail" })
	claim("other-args", time.Minute, func(r *ledger.ClaimRequest) { r.Fingerprint = fp("other") })
	claim("other-tenant", time.Minute, func(r *ledger.ClaimRequest) { r.Tenant = "tenant-b" })

	cases := []struct {
		name  string
		since time.Duration
		want  []string
	}{
		{"whole window", 0, []string{"k2b", "k2", "k1", "k0"}},
		{"since is inclusive", time.Minute, []string{"k2b", "k2", "k1"}},
		{"a microsecond later", time.Minute + time.Microsecond, []string{"k2b", "k2"}},
		{"after everything", 3 * time.Minute, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := ledger.RecentQuery{Tenant: tenant, Session: "s1", Tool: tool, Fingerprint: fp("a"), Since: base.Add(tc.since)}
			got, err := e.st.FindRecent(e.ctx, q)
			if err != nil {
				t.Fatalf("FindRecent(since +%v) = %v", tc.since, err)
			}
			var gotKeys []string
			for _, r := range got {
				gotKeys = append(gotKeys, r.Key)
			}
			if !slices.Equal(gotKeys, tc.want) {
				t.Errorf("FindRecent(since +%v) = %v; want %v (newest first)", tc.since, gotKeys, tc.want)
			}
		})
	}
}

func testList(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	base := e.clock.Now()
	// Ties on CreatedAt and tools and keys whose byte order differs from a
	// case-insensitive order pin down the one stable order.
	tools := []string{"a", "B", "b", "_x"}
	var all []*ledger.Record
	for i := range 23 {
		e.clock.Set(base.Add(time.Duration(i/3) * time.Second))
		r := req(fmt.Sprintf("%c-%02d", "kK"[i%2], i), "owner-1")
		r.Tool = tools[i%len(tools)]
		r.Session = fmt.Sprintf("s%d", i%2)
		all = append(all, e.mustClaim(r))
	}
	// One key of two tools, created apart: a lookup by the key alone finds
	// both, newest first, and no other record.
	for i, tool := range []string{"b", "a"} {
		e.clock.Set(base.Add(time.Duration(2+3*i) * time.Second))
		r := req("dup", "owner-1")
		r.Tool = tool
		all = append(all, e.mustClaim(r))
	}
	e.clock.Set(base.Add(time.Minute))
	for i, r := range all {
		if i%5 == 0 {
			all[i] = e.mustTransition(ledger.Transition{ID: r.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "owner-1", Fence: r.Fence})
		}
	}
	order := func(recs []*ledger.Record) []string {
		s := slices.Clone(recs)
		slices.SortFunc(s, func(x, y *ledger.Record) int {
			return cmp.Or(y.CreatedAt.Compare(x.CreatedAt), cmp.Compare(y.Tool, x.Tool), cmp.Compare(y.Key, x.Key))
		})
		return keys(s)
	}
	where := func(keep func(*ledger.Record) bool) []*ledger.Record {
		var out []*ledger.Record
		for _, r := range all {
			if keep(r) {
				out = append(out, r)
			}
		}
		return out
	}
	pages := func(t *testing.T, f ledger.Filter) []string {
		t.Helper()
		var got []string
		for n := 0; ; n++ {
			if n > len(all)+1 {
				t.Fatalf("List(%+v) never ended", f)
			}
			p, err := e.st.List(e.ctx, f)
			if err != nil {
				t.Fatalf("List(%+v) = %v", f, err)
			}
			if len(p.Records) > f.PageSize() {
				t.Fatalf("List(limit %d) returned %d records", f.PageSize(), len(p.Records))
			}
			if p.Next != "" && len(p.Records) != f.PageSize() {
				t.Errorf("List(limit %d) returned a short page of %d with a next cursor", f.PageSize(), len(p.Records))
			}
			got = append(got, keys(p.Records)...)
			if p.Next == "" {
				return got
			}
			f.Cursor = p.Next
		}
	}
	cases := []struct {
		name   string
		filter ledger.Filter
		want   []*ledger.Record
	}{
		{"pages of 5", ledger.Filter{Limit: 5}, all},
		{"pages of 1", ledger.Filter{Limit: 1}, all},
		{"one exact page", ledger.Filter{Limit: len(all)}, all},
		{"default limit", ledger.Filter{}, all},
		{"state", ledger.Filter{State: ledger.StateSucceeded, Limit: 2}, where(func(r *ledger.Record) bool { return r.State == ledger.StateSucceeded })},
		{"tool", ledger.Filter{Tool: "b", Limit: 2}, where(func(r *ledger.Record) bool { return r.Tool == "b" })},
		{"key", ledger.Filter{Key: "dup", Limit: 1}, where(func(r *ledger.Record) bool { return r.Key == "dup" })},
		{"key and tool", ledger.Filter{Key: "dup", Tool: "a"}, where(func(r *ledger.Record) bool { return r.Key == "dup" && r.Tool == "a" })},
		{"session", ledger.Filter{Session: "s1", Limit: 4}, where(func(r *ledger.Record) bool { return r.Session == "s1" })},
		{"since", ledger.Filter{Since: base.Add(4 * time.Second), Limit: 4}, where(func(r *ledger.Record) bool { return !r.CreatedAt.Before(base.Add(4 * time.Second)) })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.filter.Tenant = tenant
			if got, want := pages(t, tc.filter), order(tc.want); !slices.Equal(got, want) {
				t.Errorf("List(%+v) pages =\n%v\nwant\n%v", tc.filter, got, want)
			}
		})
	}

	t.Run("stable while records are added", func(t *testing.T) {
		p, err := e.st.List(e.ctx, ledger.Filter{Tenant: tenant, Limit: 10})
		if err != nil {
			t.Fatalf("List = %v", err)
		}
		got := keys(p.Records)
		e.clock.Set(base.Add(time.Hour))
		e.mustClaim(req("newest", "owner-1"))
		rest := pages(t, ledger.Filter{Tenant: tenant, Limit: 10, Cursor: p.Next})
		if got, want := append(got, rest...), order(all); !slices.Equal(got, want) {
			t.Errorf("pages with a record added in between =\n%v\nwant\n%v", got, want)
		}
	})

	t.Run("bad cursor", func(t *testing.T) {
		if _, err := e.st.List(e.ctx, ledger.Filter{Tenant: tenant, Cursor: "not a cursor!"}); err == nil {
			t.Errorf("List with a malformed cursor = nil error; want an error")
		}
	})
}
