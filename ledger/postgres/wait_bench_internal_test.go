package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// BenchmarkWait is a follower's wait for an operation another process
// runs: the follower's Store (another pool, as in another process) waits
// for a record the owner's Store then settles. settle-ns/op is the owner's
// completion (a durable commit, in both modes the same), wake-ns/op the
// time from its return to the follower's: in the default mode a
// notification wakes the follower, in the portable mode its next poll
// finds the record (PollMin 20ms, doubling to PollMax 1s, the
// defaults). "at-once" settles as soon as the follower has read the record
// once; "after-250ms" when it has waited a while, and its polls have
// spread out.
func BenchmarkWait(b *testing.B) {
	for _, mode := range []struct {
		name     string
		portable bool
	}{{"default", false}, {"portable", true}} {
		for _, delay := range []struct {
			name string
			d    time.Duration
		}{{"at-once", 0}, {"after-250ms", 250 * time.Millisecond}} {
			b.Run(mode.name+"/"+delay.name, func(b *testing.B) {
				benchWait(b, mode.portable, delay.d)
			})
		}
	}
}

func benchWait(b *testing.B, portable bool, delay time.Duration) {
	url := pgtest.Schema(b)
	owner, err := Open(context.Background(), url, &Options{Portable: portable})
	if err != nil {
		b.Fatal(err)
	}
	defer owner.Close()
	follower, err := Open(context.Background(), url, &Options{Portable: portable})
	if err != nil {
		b.Fatal(err)
	}
	defer follower.Close()
	ctx := context.Background()
	if !portable {
		// Measure waits on established connections, the follower's LISTEN
		// and the owner's sender, not their first connects.
		for _, st := range []*Store{owner, follower} {
			st.lis.start()
			for {
				live, _, _, changed := st.lis.state()
				if live {
					break
				}
				<-changed
			}
		}
	}
	read := make(chan struct{}, 1)
	hook := func(*ledger.Record) {
		select {
		case read <- struct{}{}:
		default:
		}
	}
	testHookWaitRead.Store(&hook)
	defer testHookWaitRead.Store(nil)
	var settle, wake time.Duration
	b.ResetTimer()
	for i := range b.N {
		id := ledger.ID{Tenant: "bench", Tool: "create_payment", Key: fmt.Sprintf("k-%d", i)}
		c, err := owner.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "w"})
		if err != nil || !c.Won {
			b.Fatalf("Claim(%q) = {Won: %v}, %v; want won", id.Key, c.Won, err)
		}
		select {
		case <-read: // a previous Wait's last read
		default:
		}
		done := make(chan error, 1)
		go func() {
			rec, err := follower.Wait(ctx, id)
			if err == nil && rec.State != ledger.StateSucceeded {
				err = fmt.Errorf("Wait = %s; want SUCCEEDED", rec.State)
			}
			done <- err
		}()
		<-read
		if delay > 0 {
			time.Sleep(delay) // the wait being measured, not a synchronization
		}
		t0 := time.Now()
		if _, err := owner.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: "w", Fence: c.Record.Fence, Result: json.RawMessage(`{}`), AddAttempts: 1}); err != nil {
			b.Fatalf("Transition = %v", err)
		}
		t1 := time.Now()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		settle += t1.Sub(t0)
		wake += time.Since(t1)
	}
	b.ReportMetric(float64(settle.Nanoseconds())/float64(b.N), "settle-ns/op")
	b.ReportMetric(float64(wake.Nanoseconds())/float64(b.N), "wake-ns/op")
}
