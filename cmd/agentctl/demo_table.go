package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/ledger"
)

// demoSummary is the demo's closing table; --json prints it as one object.
type demoSummary struct {
	// Operations are the payments the agent meant and that ran; Executions
	// counts the payments the server made, all keys together. They are
	// equal when every operation took effect exactly once.
	Operations int `json:"operations"`
	Attempts   int `json:"attempts"`
	Executions int `json:"executions"`
	// Replays counts answers that came from a ledger (the agent's or the
	// server's) instead of an execution.
	Replays      int      `json:"replays"`
	UnknownFound int      `json:"unknownFound"`
	Reconciled   int      `json:"reconciled"`
	Refused      int      `json:"refused"`
	Seconds      float64  `json:"seconds"`
	Rows         []demoOp `json:"rows"`
}

// summary reads each operation's record and the bank's payments.
func (d *demo) summary(took time.Duration) (*demoSummary, error) {
	s := &demoSummary{UnknownFound: d.unknown, Reconciled: d.reconciled, Refused: d.refused,
		Seconds: float64(took.Milliseconds()) / 1000}
	for _, op := range d.ops {
		rec, err := d.store.Get(d.ctx, ledger.ID{Tenant: d.a.tenant, Layer: ledger.LayerClient, Tool: payments.ToolCreate, Key: op.Key})
		if err != nil {
			return nil, fmt.Errorf("demo: reading the record of %s: %w", op.Key, err)
		}
		op.Attempts, op.State = rec.Attempts, rec.State
		if op.Executions, err = d.bank.Payments(d.ctx, op.Key); err != nil {
			return nil, err
		}
		if ledger.RowOf(rec.State).Ran == ledger.RanYes {
			s.Operations++
		}
		s.Attempts += op.Attempts
		s.Replays += op.Replays
		s.Rows = append(s.Rows, *op)
	}
	if err := d.bank.DB().QueryRowContext(d.ctx, `SELECT count(*) FROM payments`).Scan(&s.Executions); err != nil {
		return nil, fmt.Errorf("demo: counting payments: %w", err)
	}
	return s, nil
}

func (d *demo) printTable(s *demoSummary) error {
	d.a.fprintf(d.out, "\n")
	width := d.a.proseWidth(d.out)
	// Counts and states are kept whole; a long key is what gives way.
	t := newTable(d.out, d.a.colour(), "OPERATION", "KEY", "ATTEMPTS", "EXECUTIONS", "REPLAYS", "STATE").keep(0, 2, 3, 4, 5).fit(width)
	reconciled := false
	for _, r := range s.Rows {
		state := string(r.State)
		if r.Reconciled {
			state += "*"
			reconciled = true
		}
		t.row(r.Name, r.Key, strconv.Itoa(r.Attempts), strconv.Itoa(r.Executions), strconv.Itoa(r.Replays),
			t.paint(stateColour(r.State), state))
	}
	t.row(fmt.Sprintf("%d operations", s.Operations), "", strconv.Itoa(s.Attempts), strconv.Itoa(s.Executions), strconv.Itoa(s.Replays), t.paint(plain, ""))
	if err := t.flush(); err != nil {
		return err
	}
	if reconciled {
		d.a.fprintf(d.out, "%s\n", wrapIndent("* reconciled: settled from the server's own record after the outcome was UNKNOWN", width, "", "  "))
	}
	d.a.fprintf(d.out, "\n")
	d.a.fprintf(d.out, "%s\n", wrapIndent(fmt.Sprintf("UNKNOWN found %d, reconciled %d; key reuse refused %d. %d attempts, %d payments made: one per operation. (%.1f s)",
		s.UnknownFound, s.Reconciled, s.Refused, s.Attempts, s.Executions, s.Seconds), width, "", ""))
	if s.Executions != s.Operations {
		return fmt.Errorf("demo: %d payments for %d operations", s.Executions, s.Operations)
	}
	return nil
}
