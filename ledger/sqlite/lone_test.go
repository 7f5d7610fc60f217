package sqlite_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// A lone write commits once when it changes something and never when it
// changes nothing; a lone claim returns exactly the record it stored.
func TestLoneWrites(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, nil)
	req := claimReq("lone", "owner-1")
	var won *ledger.Record
	steps := []struct {
		name        string
		run         func() error
		wantErr     error
		wantCommits int64
	}{
		{"new key", func() error {
			c, err := st.Claim(ctx, req)
			if err == nil && !c.Won {
				return errors.New("not won")
			}
			if err == nil {
				won = c.Record
			}
			return err
		}, nil, 1},
		{"duplicate", func() error {
			c, err := st.Claim(ctx, claimReq("lone", "owner-2"))
			if err == nil && c.Won {
				return errors.New("duplicate won")
			}
			return err
		}, nil, 0},
		{"reused key", func() error {
			r := claimReq("lone", "owner-2")
			r.Fingerprint = "fp-other"
			_, err := st.Claim(ctx, r)
			return err
		}, ledger.ErrKeyReused, 0},
		{"stale owner", func() error {
			_, err := st.Transition(ctx, ledger.Transition{ID: req.ID, From: ledger.StateProcessing,
				To: ledger.StateSucceeded, Owner: "owner-2", Fence: won.Fence})
			return err
		}, ledger.ErrLeaseLost, 0},
		{"stale fence", func() error {
			_, err := st.Transition(ctx, ledger.Transition{ID: req.ID, From: ledger.StateProcessing,
				To: ledger.StateSucceeded, Owner: "owner-1", Fence: won.Fence + 1})
			return err
		}, ledger.ErrLeaseLost, 0},
		{"renew by stranger", func() error {
			return st.Renew(ctx, ledger.Lease{ID: req.ID, Owner: "owner-2", Fence: won.Fence}, 0)
		}, ledger.ErrLeaseLost, 0},
		{"renew", func() error {
			return st.Renew(ctx, ledger.LeaseOf(won), 0)
		}, nil, 1},
		{"complete", func() error {
			_, err := st.Transition(ctx, ledger.Transition{ID: req.ID, From: ledger.StateProcessing,
				To: ledger.StateRetryable, Owner: "owner-1", Fence: won.Fence})
			return err
		}, nil, 1},
		{"take over retryable", func() error {
			c, err := st.Claim(ctx, claimReq("lone", "owner-3"))
			if err == nil && !c.Won {
				return errors.New("retryable record not taken over")
			}
			return err
		}, nil, 1},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			before := sqlite.Commits(st)
			err := s.run()
			if (s.wantErr == nil && err != nil) || (s.wantErr != nil && !errors.Is(err, s.wantErr)) {
				t.Fatalf("%s = %v; want %v", s.name, err, s.wantErr)
			}
			if got := sqlite.Commits(st) - before; got != s.wantCommits {
				t.Errorf("%s took %d commits; want %d", s.name, got, s.wantCommits)
			}
			if s.name == "new key" {
				stored, err := st.Get(ctx, req.ID)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(won, stored) {
					t.Errorf("Claim(%q) record = %+v; want the stored %+v", req.Key, won, stored)
				}
			}
		})
	}
}
