package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
)

func init() {
	ledgerCommands = append(ledgerCommands, newLedgerDecideCmd(true), newLedgerDecideCmd(false))
}

func newLedgerDecideCmd(approve bool) func(a *app) *cobra.Command {
	return func(a *app) *cobra.Command {
		var tool, reason, policyPath string
		var session bool
		var standFor time.Duration
		c := &cobra.Command{
			Use:   "approve KEY [--tool T] [--reason TEXT] [--session [--for DURATION]]",
			Short: "Approve a queued call: the next call with its key runs it, once",
			Long: `approve records a person's approval on a call that waits for one (exit 6 of
agentctl call). The approval is bound to the call's key, its arguments'
fingerprint, the policy version it was queued under and its expiry; it is
used once, by the next call with that key (or the same call re-planned in
its session), which runs it. --session also approves later calls of the same
tool in that session for --for (default: until the call's approval expires).
A policy with "distinctApprover": true refuses an approval by the requester.`,
			Example: `  agentctl ledger approve order-42
  agentctl ledger approve order-42 --tool create_payment --reason "checked"`,
			Args: usageArgs(1, 1),
		}
		if !approve {
			c.Use = "deny KEY [--tool T] --reason TEXT"
			c.Short = "Deny a queued call: the next call with its key gets the denial"
			c.Long = `deny records a person's "no" on a call that waits for approval. The record
becomes DENIED (final): the next call with that key gets the denial, and
nothing runs.`
		}
		c.RunE = runE(func(c *cobra.Command, args []string) error {
			if !approve && reason == "" {
				return exitf(exitUsage, "deny needs --reason TEXT: the requester is told why")
			}
			if approve && c.Flags().Changed("for") && !session {
				return exitf(exitUsage, "--for %v sets how long a session approval stands; add --session (approve later calls of this tool in the call's session), or leave out --for", standFor)
			}
			if standFor < 0 {
				return exitf(exitUsage, "--for %v: want a positive duration such as 1h", standFor)
			}
			policy, err := loadPolicy(policyPath)
			if err != nil {
				return err
			}
			// A decision writes the record (findByKey below refuses a
			// ledger without it).
			st, err := a.ledger(c.Context(), existing)
			if err != nil {
				return err
			}
			r, err := a.findPending(c.Context(), st, args[0], tool, approve)
			if err != nil {
				return err
			}
			after, err := client.Decide(c.Context(), st, r.ID, client.Decision{
				Approve: approve, ForSession: session, For: standFor,
				By: a.who(), Via: "agentctl", Reason: reason, DistinctApprover: policy.DistinctApprover, PolicyVersion: policy.Version(),
			})
			switch {
			case errors.Is(err, client.ErrSameApprover):
				return exitf(exitDenied, "%v; the policy requires another person to approve %s %s", err, r.Tool, r.Key)
			case errors.Is(err, client.ErrOtherPolicy):
				return exitf(exitUsage, "%s %s was not approved: you requested it, it was queued under another policy (version %s, this one is %s), and only that policy says whether you may approve it; run approve again with --policy naming the policy file the call runs under, or ask another person to approve it",
					r.Tool, r.Key, queuedVersion(r), policy.Version())
			case errors.Is(err, client.ErrNotQueued):
				return exitf(exitUsage, "%v; only calls that wait for approval (agentctl ledger list --state pending_approval) are decided", err)
			case errors.Is(err, ledger.ErrLeaseLost), errors.Is(err, ledger.ErrStateChanged):
				return exitf(exitUsage, "record %s changed while deciding it; look again with agentctl ledger show %s", r.Key, r.Key)
			case err != nil:
				return err
			}
			if a.json {
				return a.printJSON(after)
			}
			ap := after.Approval
			switch {
			case !approve:
				a.printf("%s %s: %s -> %s by %s\n", after.Tool, after.Key, ledger.StatePendingApproval, after.State, ap.By)
			case ap.Decision == ledger.DecisionApprovedSession:
				a.printf("%s %s: approved by %s until %s; the next call with this key runs it, and later calls of %s in session %s run without asking until %s\n",
					after.Tool, after.Key, ap.By, timeText(after.LeaseUntil), after.Tool, orDash(after.Session), timeText(ap.Expires))
			default:
				a.printf("%s %s: approved by %s until %s; the next call with this key runs it\n",
					after.Tool, after.Key, ap.By, timeText(after.LeaseUntil))
			}
			return nil
		})
		fl := c.Flags()
		fl.StringVar(&tool, "tool", "", "the record's `TOOL`, when several tools used the key")
		fl.StringVar(&reason, "reason", "", "why (`TEXT`, kept on the record and shown to the requester)")
		a.policyFlag(c, &policyPath)
		if approve {
			fl.BoolVar(&session, "session", false, "also approve later calls of this tool in the call's session")
			fl.DurationVar(&standFor, "for", 0, "with --session: how long the session approval stands (`DURATION`; default: the call's approval expiry)")
		}
		return c
	}
}

// queuedVersion is the policy version r was queued under.
func queuedVersion(r *ledger.Record) string {
	q, _ := client.QueuedCall(r)
	return orDash(q.PolicyVersion)
}

// findPending finds the queued call a person decides on: the one record
// of key (of tool, when given) that waits for approval. A key whose
// records wait for nothing is named with the state each is in (as it
// reads now: an approval whose expiry passed is REJECTED).
func (a *app) findPending(ctx context.Context, st ledger.Store, key, tool string, approve bool) (*ledger.Record, error) {
	all, err := a.findAllByKey(ctx, st, key, tool, "")
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var pending []*ledger.Record
	var states []string
	for _, r := range all {
		shown := ledger.AsRead(r, now)
		if ledger.RowOf(shown.State).Waits == ledger.WaitsPerson {
			pending = append(pending, r)
			continue
		}
		why := ""
		switch {
		case shown.ErrorKind == ledger.KindApprovalExpired:
			why = fmt.Sprintf(" (its approval expired at %s; nothing ran)", timeText(r.LeaseUntil))
		case shown.Approval != nil:
			why = fmt.Sprintf(" (%s by %s at %s)", shown.Approval.Decision, orDash(shown.Approval.By), timeText(shown.Approval.At))
		}
		states = append(states, fmt.Sprintf("its %s record (layer %s) is %s%s", shown.Tool, layerText(shown.Layer), shown.State, why))
	}
	verb := "approved"
	if !approve {
		verb = "denied"
	}
	switch len(pending) {
	case 1:
		return pending[0], nil
	case 0:
		return nil, exitf(exitUsage, "key %s awaits no approval: %s; only calls that wait for approval (agentctl ledger list --state pending_approval) are %s",
			key, strings.Join(states, "; "), verb)
	}
	layers := make([]string, 0, len(pending))
	for _, r := range pending {
		layers = append(layers, r.Tool+" in layer "+layerText(r.Layer))
	}
	return nil, exitf(exitUsage, "key %s names several calls that wait for approval (%s); pass --tool and --layer to choose one", key, strings.Join(layers, ", "))
}

// awaitingError is the exit-6 line of a call that waits for approval.
func (a *app) awaitingError(tool, key string, err error) error {
	if up, ok := errors.AsType[*client.UpstreamApproval](err); ok {
		return exitf(exitAwaiting, "%s (key %s) awaits a person's approval at the server it was sent to, under its key %s; nothing ran; approve it in that server's ledger (agentctl --ledger ITS_LEDGER ledger approve %s, or its web console), then run the same command again with --key %s",
			tool, orDash(key), up.Key, up.Key, orDash(key))
	}
	why := ""
	if ce, ok := errors.AsType[*client.Error](err); ok && ce.Err != client.ErrAwaitingApproval {
		why = " (" + ledger.OneLine(ce.Err.Error(), 200) + ")"
	}
	return exitf(exitAwaiting, "%s (key %s) awaits a person's approval%s; nothing ran; approve it with agentctl ledger approve %s (or deny it with agentctl ledger deny %s --reason TEXT), then run the same command again with --key %s",
		tool, orDash(key), why, orDash(key), orDash(key), orDash(key))
}

// waitApproval calls again, under the queued call's key, until a person
// decides or wait runs out. The ledger keeps the queued call, not this
// process: giving up changes nothing.
func waitApproval(ctx context.Context, cl *client.Client, p *mcp.CallToolParams, wait time.Duration, first error, st *status) (*client.Outcome, error) {
	ce, ok := errors.AsType[*client.Error](first)
	if !ok || ce.Key == "" {
		return nil, first
	}
	if up, ok := errors.AsType[*client.UpstreamApproval](first); ok {
		st.set("waiting up to %s for a person to approve %s at the server it was sent to (its key %s)", wait, p.Name, up.Key)
	} else {
		st.set("waiting up to %s for a person to approve %s (key %s): agentctl ledger approve %s", wait, p.Name, ce.Key, ce.Key)
	}
	ctx = client.WithKey(ctx, ce.Key)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(min(500*time.Millisecond, wait))
	defer tick.Stop()
	err := first
	for {
		select {
		case <-ctx.Done():
			return nil, err
		case <-deadline.C:
			return nil, err
		case <-tick.C:
		}
		var out *client.Outcome
		out, err = cl.Call(ctx, p)
		if !errors.Is(err, client.ErrAwaitingApproval) {
			return out, err
		}
	}
}
