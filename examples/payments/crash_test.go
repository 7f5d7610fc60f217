package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A payments server killed mid-handler leaves its record PROCESSING; the
// restarted server turns it UNKNOWN and its reconciler (findPayment) looks
// the key up in the payments table, so the next call with the key gets
// its answer without a person: the first payment, when the kill came
// after the commit; a payment made now, when nothing had committed. The
// key pays once either way.
func TestKilledDuringHandler(t *testing.T) {
	tests := []struct {
		name       string
		point      string
		wantReplay bool
	}{
		{"before the commit", payments.FaultHandler, false},
		{"after the commit", payments.FaultHandlerCommitted, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			const key = "crash-1"
			args := []string{"-db", filepath.Join(dir, "p.db"), "-lease", "300ms", "-delivery-lease", "500ms"}
			ctx := context.Background()

			cs, cmd, log := startStdio(t, []string{payments.FaultEnv + "=" + tc.point + "=hang"}, args...)
			callErr := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, payParams(key))
				callErr <- err
			}()
			log.waitLine(t, payments.ReachedLine(tc.point), 30*time.Second)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("SIGKILL: %v", err)
			}
			if err := <-callErr; err == nil {
				t.Fatalf("call to a server killed mid-handler returned no error")
			}
			cs.Close()

			// The dead process left its claim unsettled: PROCESSING, or
			// UNKNOWN once its 300ms lease ran out and something read it.
			st, err := sqlite.Open(ctx, filepath.Join(dir, "p.ledger.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			id := ledger.ID{Layer: ledger.LayerServer, Tenant: server.DefaultTenant, Tool: payments.ToolCreate, Key: key}
			rec, err := st.Get(ctx, id)
			st.Close()
			if err != nil || (rec.State != ledger.StateProcessing && rec.State != ledger.StateUnknown) {
				t.Fatalf("record after SIGKILL = %v, %v; want PROCESSING or UNKNOWN", rec, err)
			}
			_, paidBefore := countCmd(t, dir, key)

			cs2, _, _ := startStdio(t, nil, args...)
			res, err := cs2.CallTool(ctx, payParams(key))
			if err != nil {
				t.Fatalf("the call with the key after a restart = %v; want the payment", err)
			}
			got := paymentOf(t, res)
			_, replayed := res.Meta[wire.MetaReplay]
			if replayed != tc.wantReplay || res.IsError {
				t.Errorf("answer = %+v (replayed %v); want a payment, replayed %v", res, replayed, tc.wantReplay)
			}
			if tc.wantReplay {
				marker, _ := json.Marshal(res.Meta[wire.MetaReplay])
				if !strings.Contains(string(marker), `"state":"SUCCEEDED"`) || !strings.Contains(string(marker), `"method":"reconciler"`) {
					t.Errorf("replay marker = %s; want SUCCEEDED, reconciled by the reconciler", marker)
				}
				if paidBefore != 1 || !strings.Contains(listCmd(t, dir), got) {
					t.Errorf("the answer's payment %s is not the one the killed server made (%d payments then)", got, paidBefore)
				}
			}
			// The payment's event reaches the downstream once.
			waitCounts(t, dir, key, func(c payments.Counts) bool { return c.Applied == 1 })
			if _, paid := countCmd(t, dir, key); paid != 1 {
				t.Errorf("payments made with %s = %d; want 1", key, paid)
			}
			again, err := cs2.CallTool(ctx, payParams(key))
			if err != nil || paymentOf(t, again) != got {
				t.Errorf("the next call = %v; want a replay of payment %s", err, got)
			}
		})
	}
}

// "payments -reconcile KEY" runs, by hand, the reconciler the server runs
// by itself: a payment whose handler failed after its commit is found in
// the payments table, and every later call with the key gets it back.
func TestReconcileByHand(t *testing.T) {
	dir := t.TempDir()
	const key = "by-hand-1"
	args := []string{"-db", filepath.Join(dir, "p.db")}
	ctx := context.Background()
	cs, _, _ := startStdio(t, []string{payments.FaultEnv + "=" + payments.FaultHandlerCommitted + "=error"}, args...)
	_, err := cs.CallTool(ctx, payParams(key))
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != -31003 {
		t.Fatalf("call whose handler failed after the commit = %v; want -31003 outcome_unknown", err)
	}
	cs.Close()

	out, err := command(nil, append(args, "-reconcile", key)...).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), string(ledger.StateSucceeded)) || !strings.Contains(string(out), "pay_") {
		t.Fatalf("payments -reconcile = %q, %v; want SUCCEEDED with the payment", out, err)
	}
	cs2, _, _ := startStdio(t, nil, args...)
	res, err := cs2.CallTool(ctx, payParams(key))
	if err != nil {
		t.Fatalf("call after reconcile: %v", err)
	}
	if got := paymentOf(t, res); !strings.Contains(listCmd(t, dir), got) {
		t.Errorf("reconciled answer names payment %s, which the table does not hold", got)
	}
	if _, paid := countCmd(t, dir, key); paid != 1 {
		t.Errorf("payments made with %s = %d; want 1", key, paid)
	}
}

// paymentOf is the payment id of a create_payment result.
func paymentOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var p payments.Payment
	if err := json.Unmarshal(b, &p); err != nil || p.PaymentID == "" {
		t.Fatalf("result %+v names no payment (%v)", res, err)
	}
	return p.PaymentID
}

// listCmd is what "payments -list" prints.
func listCmd(t *testing.T, dir string) string {
	t.Helper()
	out, err := command(nil, "-db", filepath.Join(dir, "p.db"), "-list").Output()
	if err != nil {
		t.Fatalf("payments -list: %v", err)
	}
	return string(out)
}

func TestDispatcherKilledMidDelivery(t *testing.T) {
	dir := t.TempDir()
	const key = "deliver-1"
	args := []string{"-db", filepath.Join(dir, "p.db"), "-lease", "300ms", "-delivery-lease", "500ms"}
	ctx := context.Background()

	cs, cmd, log := startStdio(t, []string{payments.FaultEnv + "=" + payments.FaultDeliverApplied + "=kill"}, args...)
	cs.CallTool(ctx, payParams(key)) // the process may die before or after it answers
	log.waitLine(t, payments.ReachedLine(payments.FaultDeliverApplied), 30*time.Second)
	cs.Wait()
	cs.Close()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("server ended with %v; want SIGKILL", cmd.ProcessState)
	}
	if c := downstreamCounts(t, dir, key); c.Deliveries != 1 || c.Applied != 1 {
		t.Fatalf("downstream before restart = %+v; want 1 delivery, applied once", c)
	}

	// The restarted dispatcher delivers the event again (its delivered mark
	// never committed); the inbox keeps the downstream from applying twice.
	cs2, _, _ := startStdio(t, nil, args...)
	c := waitCounts(t, dir, key, func(c payments.Counts) bool { return c.Deliveries >= 2 })
	if c.Applied != 1 {
		t.Errorf("downstream after redelivery = %+v; want applied exactly once", c)
	}
	// A retry of the call never makes a second payment, whatever the
	// ledger knew when the process died.
	if _, err := cs2.CallTool(ctx, payParams(key)); err != nil {
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != -31003 {
			t.Errorf("retry after the crash = %v; want a replay or -31003", err)
		}
	}
	if _, paid := countCmd(t, dir, key); paid != 1 {
		t.Errorf("payments made = %d; want 1", paid)
	}
}

func TestConcurrentSessionsOverHTTP(t *testing.T) {
	dir := t.TempDir()
	url := startHTTP(t, nil, "-db", filepath.Join(dir, "p.db"), "-wait", "30s")
	ctx := context.Background()
	const sessions, perSession, key = 5, 10, "http-1"
	var mu sync.Mutex
	bodies := map[string]int{}
	var wg sync.WaitGroup
	for range sessions {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatalf("connect %s: %v", url, err)
		}
		defer cs.Close()
		for range perSession {
			wg.Go(func() {
				res, err := cs.CallTool(ctx, payParams(key))
				if err != nil {
					t.Errorf("CallTool: %v", err)
					return
				}
				cp := *res
				cp.Meta = nil
				b, err := json.Marshal(&cp)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				bodies[string(b)]++
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if len(bodies) != 1 {
		t.Errorf("%d different results over %d calls; want all equal: %v", len(bodies), sessions*perSession, bodies)
	}
	waitCounts(t, dir, key, func(c payments.Counts) bool { return c.Applied >= 1 })
	if c, paid := countCmd(t, dir, key); paid != 1 || c.Applied != 1 {
		t.Errorf("after %d calls: %d payments, downstream %+v; want 1 payment applied once", sessions*perSession, paid, c)
	}
}
