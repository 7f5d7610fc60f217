package payments

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Fault points, where a Faults value can slow, stop or kill the process.
const (
	// FaultHandler: in create_payment, after the payment row and its event
	// are written, before the transaction commits.
	FaultHandler = "handler"
	// FaultHandlerCommitted: in create_payment, after the commit, before
	// the handler returns (the payment exists; the ledger does not know).
	FaultHandlerCommitted = "handler-committed"
	// FaultDeliverApplied: in the dispatcher, after the downstream
	// committed an event, before the outbox marks it delivered.
	FaultDeliverApplied = "deliver-applied"
	// FaultReconciler breaks create_payment's reconciler, to show what
	// checks catch it: "missing" registers none (an UNKNOWN payment waits
	// for a person), "lie" answers the opposite of the payments table
	// (not_run when the payment exists, found with a made-up payment when
	// it does not).
	FaultReconciler = "reconciler"
)

// The actions of FaultReconciler.
const (
	ReconcilerMissing = "missing"
	ReconcilerLie     = "lie"
)

// FaultEnv is the environment variable the example's main reads Faults
// from, so tests and kill suites can arm them through any launcher.
const FaultEnv = "PAYMENTS_FAULT"

// Faults maps fault points to actions, parsed from
// "point=action[,point=action]". Actions:
//
//	hang       print "payments: fault POINT reached" to the fault writer
//	           and block until the request's context ends
//	kill       print the same line, then SIGKILL this process
//	sleep:DUR  wait DUR (a time.ParseDuration string), then go on
//	stall:DUR  print the reached line, wait DUR whatever the request's
//	           context says (a server that ignores cancellation), then go on
//	error      fail at that point with an error
//
// The reconciler point takes "missing" or "lie" instead (FaultReconciler).
type Faults map[string]string

// ParseFaults parses the FaultEnv syntax. The empty string is no faults.
func ParseFaults(s string) (Faults, error) {
	f := Faults{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		point, action, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("payments: fault %q: want point=action", part)
		}
		switch point {
		case FaultHandler, FaultHandlerCommitted, FaultDeliverApplied:
		case FaultReconciler:
			if action != ReconcilerMissing && action != ReconcilerLie {
				return nil, fmt.Errorf("payments: fault %q: want reconciler=missing or reconciler=lie", part)
			}
			f[point] = action
			continue
		default:
			return nil, fmt.Errorf("payments: unknown fault point %q", point)
		}
		switch {
		case action == "hang", action == "kill", action == "error":
		case strings.HasPrefix(action, "sleep:"), strings.HasPrefix(action, "stall:"):
			if _, err := time.ParseDuration(action[len("sleep:"):]); err != nil {
				return nil, fmt.Errorf("payments: fault %q: %w", part, err)
			}
		default:
			return nil, fmt.Errorf("payments: fault %q: unknown action", part)
		}
		f[point] = action
	}
	return f, nil
}

// ReachedLine is what a hang or kill fault prints, with the point.
func ReachedLine(point string) string { return "payments: fault " + point + " reached" }

// at runs the action armed at point, if any.
func (f Faults) at(ctx context.Context, w io.Writer, point string) error {
	action, ok := f[point]
	if !ok {
		return nil
	}
	switch {
	case action == "hang":
		// The fault acts whether or not anyone reads of it.
		_, _ = fmt.Fprintln(w, ReachedLine(point))
		<-ctx.Done()
		return ctx.Err()
	case action == "kill":
		_, _ = fmt.Fprintln(w, ReachedLine(point))
		// Process.Kill is SIGKILL on Unix and TerminateProcess on Windows:
		// neither can be caught, so nothing runs after it lands.
		self, err := os.FindProcess(os.Getpid())
		if err == nil {
			err = self.Kill()
		}
		if err != nil {
			return fmt.Errorf("payments: fault %s: %w", point, err)
		}
		select {}
	case action == "error":
		return fmt.Errorf("payments: fault %s: injected error", point)
	case strings.HasPrefix(action, "stall:"):
		d, err := time.ParseDuration(strings.TrimPrefix(action, "stall:"))
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(w, ReachedLine(point))
		time.Sleep(d) // the fault: cancellation is ignored
		return nil
	case strings.HasPrefix(action, "sleep:"):
		d, err := time.ParseDuration(strings.TrimPrefix(action, "sleep:"))
		if err != nil {
			return err
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
