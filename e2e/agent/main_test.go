package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/e2e/internal/journal"
	"github.com/mcpledger/mcpledger/ledger"
)

func TestErrOutcome(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"unknown", &client.Error{Err: fmt.Errorf("%w: EOF", client.ErrOutcomeUnknown)}, journal.OutcomeUnknown},
		{"not sent", &client.Error{Err: client.ErrNotSent}, journal.OutcomeNotSent},
		{"in progress", &client.Error{Err: ledger.ErrInProgress}, journal.OutcomeInProgress},
		{"denied", &client.Error{Err: client.ErrDenied}, journal.OutcomeDenied},
		{"other", errors.New("client: claim create_payment: disk full"), journal.OutcomeError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errOutcome(tc.err); got != tc.want {
				t.Errorf("errOutcome(%v) = %q; want %q", tc.err, got, tc.want)
			}
		})
	}
}

func TestRunUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nothing", nil, "required"},
		{"no server", []string{"-ledger", "a.db", "-journal", "j", "-keys", "k"}, "either -url or a server command"},
		{"both servers", []string{"-ledger", "a.db", "-journal", "j", "-keys", "k", "-url", "http://127.0.0.1:1/", "--", "srv"}, "either -url or a server command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			err := run(tc.args, &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v; want an error saying %q", tc.args, err, tc.want)
			}
		})
	}
}
