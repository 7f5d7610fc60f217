package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

// demo is one run of agentctl demo: a scripted agent paying through the
// ledger, one step per thing that goes wrong.
type demo struct {
	a          *app
	ctx        context.Context
	out        io.Writer
	exe, payDB string
	store      ledger.Store
	bank       *payments.App
	run        string // makes this run's keys and session its own
	session    string
	confirmer  confirm.Confirmer

	step       int
	ops        []*demoOp
	firstCall  map[string]any // step 1's arguments, planned again in step 4
	refused    int
	unknown    int
	reconciled int
	timeout    time.Duration // the attempt timeout of the current step
}

// demoOp is one operation of the story: one payment the agent meant.
type demoOp struct {
	Name       string       `json:"name"`
	Key        string       `json:"key"`
	Attempts   int          `json:"attempts"`
	Executions int          `json:"executions"`
	Replays    int          `json:"replays"`
	State      ledger.State `json:"state"`
	Reconciled bool         `json:"reconciled,omitempty"`
}

// stepOptions shape the payments server and the client of one step.
type stepOptions struct {
	fault          string        // armed in the step's first server process only
	detach         bool          // the server finishes calls the client gave up on
	wait           time.Duration // how long the server lets a duplicate wait
	lose           bool          // lose the answer to the first call
	attemptTimeout time.Duration
}

func (d *demo) steps() []func() error {
	return []func() error{d.sensitive, d.lostAnswer, d.stalled, d.replanned, d.crash, d.keyReused}
}

func (d *demo) heading(title string) {
	d.step++
	d.a.fprintf(d.out, "\n%d. %s\n", d.step, title)
}

// say tells one thing that happened, wrapped at word boundaries to the
// terminal's width (80 columns when the story goes to no terminal).
func (d *demo) say(format string, args ...any) {
	d.a.fprintf(d.out, "%s\n", wrapIndent(fmt.Sprintf(format, args...), d.a.proseWidth(d.out), "   ", "      "))
}

// closeStep closes a step's client. Its error is dropped: the steps kill
// and cut their payments servers on purpose, so how a session ended says
// nothing the story does not tell from the ledger and the bank.
func closeStep(cl *client.Client) { _ = cl.Close() }

// client connects a ledger client to a fresh payments server process.
// Each reconnect starts another process, as a supervisor would restart a
// crashed server.
func (d *demo) client(o stepOptions) (*client.Client, error) {
	if o.wait == 0 {
		o.wait = 3 * time.Second
	}
	d.timeout = o.attemptTimeout
	var started atomic.Int32
	var lose atomic.Bool
	lose.Store(o.lose)
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		args := []string{demoPaymentsCmd, "--db", d.payDB, "--lease", "1s", "--wait", o.wait.String()}
		if started.Add(1) == 1 && o.fault != "" {
			args = append(args, "--fault", o.fault)
		}
		if o.detach {
			args = append(args, "--detach")
		}
		cmd := exec.Command(d.exe, args...)
		tail := &tailBuffer{max: 2048}
		cmd.Stderr = tail
		var t mcp.Transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
		if o.lose {
			t = &losingTransport{Transport: t, armed: &lose}
		}
		cctx, cancel := context.WithTimeout(ctx, demoChildTimeout)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "demo-agent", Version: version}, nil).Connect(cctx, t, nil)
		if err != nil {
			return nil, fmt.Errorf("starting the payments server: %w (it said: %s)", err, tail.lastLine())
		}
		return cs, nil
	}
	c, err := client.Dial(d.ctx, connect, d.store, &client.Options{
		Tenant:    d.a.tenant,
		Session:   d.session,
		Policy:    confirm.Default(),
		Confirmer: d.confirmer,
		Retry: &retry.Policy{
			MaxAttempts: 10, InitialInterval: 50 * time.Millisecond, MaxInterval: 400 * time.Millisecond,
			MaxElapsed: 20 * time.Second, OnRetry: d.onRetry,
		},
		AttemptTimeout: o.attemptTimeout,
		InProgressWait: 5 * time.Second,
	})
	if err != nil {
		return nil, withCode(exitUnreachable, fmt.Errorf("demo: %w", err))
	}
	return c, nil
}

// onRetry tells what made an attempt fail, as the client decides to try
// again under the same key.
func (d *demo) onRetry(err error, next time.Duration, attempt int) {
	d.say("attempt %d: %s; again in %v with the same key", attempt, d.why(err), next.Round(time.Millisecond))
}

func (d *demo) why(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %v (the server may still be working)", d.timeout)
	case retry.Reason(err) == ledger.ReasonInProgress:
		return "the server says the first attempt is still running"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, mcp.ErrConnectionClosed):
		return "the connection broke before the answer arrived"
	}
	return oneLine(err.Error())
}

func payment(cents int, currency, payee string) map[string]any {
	return map[string]any{"amount_cents": cents, "currency": currency, "payee": payee}
}

func describe(args map[string]any) string {
	cents := args["amount_cents"].(int)
	return fmt.Sprintf("create_payment %d.%02d %s to %s", cents/100, cents%100, args["currency"], args["payee"])
}

// pay calls create_payment and adds the operation to the story.
func (d *demo) pay(cl *client.Client, ctx context.Context, name string, args map[string]any) (*demoOp, *client.Outcome, error) {
	out, err := cl.Call(ctx, &mcp.CallToolParams{Name: payments.ToolCreate, Arguments: args})
	op := &demoOp{Name: name}
	if out != nil {
		op.Key = out.Key
	}
	if ce, ok := errors.AsType[*client.Error](err); ok {
		op.Key = ce.Key
	}
	if op.Key != "" {
		d.ops = append(d.ops, op)
	}
	return op, out, err
}

// denied tells a denial (a person at the terminal said no) and reports
// whether err was one; the story goes on without that payment.
func (d *demo) denied(err error) bool {
	ce, ok := errors.AsType[*client.Error](err)
	if !ok || !errors.Is(err, client.ErrDenied) {
		return false
	}
	reason := "no reason given"
	if rec, gerr := d.store.Get(d.ctx, ledger.ID{Tenant: d.a.tenant, Layer: ledger.LayerClient, Tool: ce.Tool, Key: ce.Key}); gerr == nil && rec.Approval != nil {
		reason = fmt.Sprintf("%s by %s", rec.Approval.Reason, rec.Approval.By)
	}
	d.say("-> denied (%s); nothing ran, and the ledger keeps the decision", reason)
	return true
}

// paid tells the outcome of a payment that went through.
func (d *demo) paid(op *demoOp, out *client.Outcome) {
	how := fmt.Sprintf("%d attempt(s)", out.Attempts)
	if _, ok := out.Result.Meta[wire.MetaReplay]; ok && !out.Replayed {
		// The server had already run it: its own ledger answered.
		how += "; the last answer came from the server's ledger, not from a second payment"
		op.Replays++
	}
	d.say("-> %s (key %s), %s", paymentText(out.Result), out.Key, how)
}

func (d *demo) sensitive() error {
	d.heading("A sensitive call needs a person")
	cl, err := d.client(stepOptions{})
	if err != nil {
		return err
	}
	defer closeStep(cl)
	d.firstCall = payment(1250, "EUR", "acme")
	why := "the policy asks"
	if tool, err := d.tool(cl); err == nil {
		_, why = confirm.Default().Explain(confirm.Tool{Name: tool.Name, Server: "payments", Hints: client.Hints(tool.Annotations)})
	}
	d.say("%s: the policy wants a person to decide (%s)", describe(d.firstCall), why)
	op, out, err := d.pay(cl, d.ctx, "confirmation", d.firstCall)
	if d.denied(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("demo step %d: %w", d.step, err)
	}
	if ap := out.Record.Approval; ap != nil {
		d.say("%s by %s: %s", decisionText(ap.Decision), ap.By, ap.Reason)
	}
	d.paid(op, out)
	return nil
}

func (d *demo) lostAnswer() error {
	d.heading("The answer is lost on the way back")
	cl, err := d.client(stepOptions{lose: true})
	if err != nil {
		return err
	}
	defer closeStep(cl)
	args := payment(2500, "EUR", "initech")
	d.say("%s with key demo-%s-lost; the network will drop the server's answer", describe(args), d.run)
	op, out, err := d.pay(cl, client.WithKey(d.ctx, "demo-"+d.run+"-lost"), "lost answer", args)
	return d.settled(op, out, err)
}

func (d *demo) stalled() error {
	d.heading("The server stalls")
	cl, err := d.client(stepOptions{fault: payments.FaultHandlerCommitted + "=sleep:1500ms", detach: true, wait: 200 * time.Millisecond, attemptTimeout: 500 * time.Millisecond})
	if err != nil {
		return err
	}
	defer closeStep(cl)
	args := payment(3000, "EUR", "umbrella")
	d.say("%s; the bank takes 1.5 s, the agent waits 0.5 s per attempt", describe(args))
	op, out, err := d.pay(cl, client.WithKey(d.ctx, "demo-"+d.run+"-stall"), "stalled server", args)
	return d.settled(op, out, err)
}

func (d *demo) replanned() error {
	d.heading("The model plans the same call again")
	cl, err := d.client(stepOptions{})
	if err != nil {
		return err
	}
	defer closeStep(cl)
	d.say("%s again, no key: the model lost track of step 1", describe(d.firstCall))
	out, err := cl.Call(d.ctx, &mcp.CallToolParams{Name: payments.ToolCreate, Arguments: d.firstCall})
	if ce, ok := errors.AsType[*client.Error](err); ok {
		// Step 1 was denied: the repeat gets the denial, not a prompt.
		d.say("-> %s", ce.Text)
		return nil
	}
	if err != nil {
		return fmt.Errorf("demo step %d: %w", d.step, err)
	}
	if !out.Replayed {
		return fmt.Errorf("demo step %d: the repeated call was executed again (key %s)", d.step, out.Key)
	}
	for _, op := range d.ops {
		if op.Key == out.Key {
			op.Replays++
		}
	}
	ago := time.Since(out.Record.CreatedAt).Round(time.Second)
	d.say("-> the ledger matched it to step 1 (same session and arguments, %v ago): %s replayed, nothing sent", ago, paymentText(out.Result))
	return nil
}

func (d *demo) crash() error {
	d.heading("The server crashes mid-call and restarts")
	cl, err := d.client(stepOptions{fault: payments.FaultHandlerCommitted + "=kill"})
	if err != nil {
		return err
	}
	defer closeStep(cl)
	args := payment(4000, "EUR", "hooli")
	key := "demo-" + d.run + "-crash"
	d.say("%s with key %s; the server process dies right after it commits", describe(args), key)
	op, out, err := d.pay(cl, client.WithKey(d.ctx, key), "crash, restart", args)
	if d.denied(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("demo step %d: want the payment back from the restarted server, got %v", d.step, err)
	}
	// The restarted server found its record of the key UNKNOWN (the dead
	// process may have paid) and asked its reconciler, which looked the
	// key up in the payments table: the marker says so.
	rc, err := reconciledBy(out.Result)
	if err != nil {
		return fmt.Errorf("demo step %d: %w", d.step, err)
	}
	d.unknown++
	d.reconciled++
	op.Reconciled = true
	op.Replays++
	d.say("-> the restarted server found the key UNKNOWN (the dead process may have paid) and asked its %s (%s): it found %s in the payments table, so the answer is the first payment, with no person and no second payment (%d attempt(s))",
		rc.Method, rc.By, paymentText(out.Result), out.Attempts)
	return nil
}

// reconciledBy reads how the server settled a replayed result that was
// UNKNOWN: the replay marker's reconciled member.
func reconciledBy(res *mcp.CallToolResult) (*wire.Reconciled, error) {
	raw, err := json.Marshal(res.Meta[wire.MetaReplay])
	if err != nil {
		return nil, err
	}
	var m wire.Replay
	if err := json.Unmarshal(raw, &m); err != nil || m.Reconciled == nil {
		return nil, fmt.Errorf("want the server's reconciler to have settled the payment, got the marker %s", raw)
	}
	return m.Reconciled, nil
}

func (d *demo) keyReused() error {
	d.heading("A key is reused with other arguments")
	cl, err := d.client(stepOptions{})
	if err != nil {
		return err
	}
	defer closeStep(cl)
	args := payment(9900, "EUR", "initech")
	key := "demo-" + d.run + "-lost"
	d.say("%s with key %s, the key of step 2", describe(args), key)
	_, err = cl.Call(client.WithKey(d.ctx, key), &mcp.CallToolParams{Name: payments.ToolCreate, Arguments: args})
	if !errors.Is(err, ledger.ErrKeyReused) {
		return fmt.Errorf("demo step %d: want the key refused, got %v", d.step, err)
	}
	d.refused++
	d.say("-> refused before anything was sent: that key already paid 25.00 EUR to initech")
	return nil
}

func decisionText(d string) string {
	switch d {
	case ledger.DecisionApproved:
		return "approved once"
	case ledger.DecisionApprovedSession:
		return "approved for this session"
	}
	return d
}

// tool is the server's definition of create_payment.
func (d *demo) tool(cl *client.Client) (*mcp.Tool, error) {
	for t, err := range cl.Session().Tools(d.ctx, nil) {
		if err != nil {
			return nil, err
		}
		if t.Name == payments.ToolCreate {
			return t, nil
		}
	}
	return nil, fmt.Errorf("the payments server has no %s", payments.ToolCreate)
}

// paymentText is the first line of a payment result.
func paymentText(r *mcp.CallToolResult) string {
	text, _, _ := strings.Cut(resultText(r), "\n")
	return text
}

// settled tells how a step's payment ended: denied (the story goes on),
// failed (the demo stops), or paid.
func (d *demo) settled(op *demoOp, out *client.Outcome, err error) error {
	if d.denied(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("demo step %d: %w", d.step, err)
	}
	d.paid(op, out)
	return nil
}
