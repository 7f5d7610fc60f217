package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
)

// This file is the callback of DESIGN.md, "Reconciliation": a downstream
// system that knows what became of a call reports it over HTTP, with a
// token of its own, and the record's UNKNOWN is settled on that evidence
// (ledger.Resolve, MethodCallback, By the token's name).
//
//	POST /api/v1/reconcile
//	Authorization: Bearer TOKEN
//	{"tool": "create_payment", "key": "order-42", "outcome": "succeeded",
//	 "result": {"content": [{"type": "text", "text": "payment p-9"}]},
//	 "evidence": "payments table row 9, idempotency key order-42"}
//
// Answers: 200 with the settled record; 400 for a report that cannot be
// read; 401 without a reconciler's token; 404 for a record the token does
// not reach (another tenant's, or no such key); 409 for a record that is no
// longer UNKNOWN, with its state and resolution; 413 for a body too large.

// ReconcilePath is where reconcilers report outcomes.
const ReconcilePath = "/api/v1/reconcile"

// Reconciler is a system the console lets report outcomes: its own token,
// the name its reports are recorded under, and the tenants whose records
// it may settle (Options.Tenant alone when empty). It is an Approver entry
// read from a file of the same form, but it opens no page.
type Reconciler = Approver

// maxReport bounds a report's body: the largest result the ledger keeps
// whole, and room for the rest.
const maxReport = ledger.DefaultMaxResult + 64<<10

// checkReconcilers checks opts.Reconcilers as approvers are checked; no
// reconciler may hold an approver's token.
func checkReconcilers(opts Options, approvers []Approver) ([]Reconciler, error) {
	if len(opts.Reconcilers) == 0 {
		return nil, nil
	}
	return checkTokens("reconciler", opts.Reconcilers, opts.Tenant, approvers)
}

// report is the body of POST /api/v1/reconcile.
type report struct {
	// Tenant is needed only for a token that reaches several.
	Tenant string `json:"tenant,omitempty"`
	// Layer names the record's layer; absent, the key's one UNKNOWN
	// record in any layer. "" is a ledger without layers.
	Layer   *string `json:"layer,omitempty"`
	Tool    string  `json:"tool"`
	Key     string  `json:"key"`
	Outcome string  `json:"outcome"`
	// Result is the CallToolResult every later repeat gets back, for
	// succeeded and failed (a text result saying who reported what when
	// absent).
	Result   json.RawMessage `json:"result,omitempty"`
	Evidence string          `json:"evidence"`
}

// outcomes are the verdicts a report may carry: a system that does not
// know sends nothing.
var outcomes = map[string]ledger.Verdict{
	"succeeded": ledger.VerdictFound,
	"failed":    ledger.VerdictFailed,
	"not_run":   ledger.VerdictNotRun,
}

// answer is the body of every reply: the record as it stands, or the
// error (with the record's state for 409).
type answer struct {
	Tenant     string             `json:"tenant,omitempty"`
	Layer      *string            `json:"layer,omitempty"`
	Tool       string             `json:"tool,omitempty"`
	Key        string             `json:"key,omitempty"`
	State      ledger.State       `json:"state,omitempty"`
	Resolution *ledger.Resolution `json:"resolution,omitempty"`
	Error      string             `json:"error,omitempty"`
}

func answerOf(rec *ledger.Record) answer {
	layer := rec.Layer
	return answer{Tenant: rec.Tenant, Layer: &layer, Tool: rec.Tool, Key: rec.Key, State: rec.State, Resolution: rec.Reconciled}
}

func reply(w http.ResponseWriter, status int, a answer) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(a); err != nil {
		return // the reporter went away
	}
}

func replyError(w http.ResponseWriter, status int, format string, args ...any) {
	reply(w, status, answer{Error: "reconcile: " + fmt.Sprintf(format, args...)})
}

// reconcileAPI serves POST /api/v1/reconcile.
func (c *Console) reconcileAPI(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		replyError(w, http.StatusMethodNotAllowed, "%s is not served here; POST a JSON report", r.Method)
		return
	}
	who := c.reconcilerOf(r)
	if who == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpledger reconcile"`)
		if len(c.reconcilers) == 0 {
			replyError(w, http.StatusUnauthorized, "this console takes no reports; start agentctl ui with --reconcilers FILE")
			return
		}
		replyError(w, http.StatusUnauthorized, "no valid reconciler token; send \"Authorization: Bearer TOKEN\" with a token of the --reconcilers file")
		return
	}
	rep, err := readReport(w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			replyError(w, http.StatusRequestEntityTooLarge, "the report is over %d bytes; send a smaller result", maxReport)
			return
		}
		replyError(w, http.StatusBadRequest, "%v", err)
		return
	}
	verdict, err := rep.check()
	if err != nil {
		replyError(w, http.StatusBadRequest, "%v", err)
		return
	}
	tenant, ok := reporterTenant(w, who, rep.Tenant)
	if !ok {
		return
	}
	rec, ok := c.reported(w, r, tenant, rep)
	if !ok {
		return
	}
	if ledger.RowOf(rec.State).Act != ledger.ActReconcile {
		a := answerOf(rec)
		a.Error = fmt.Sprintf("reconcile: record %s of tool %s is %s, not UNKNOWN: it was settled already; nothing changed", rec.Key, rec.Tool, rec.State)
		reply(w, http.StatusConflict, a)
		return
	}
	after, err := ledger.Resolve(r.Context(), c.opts.Store, rec, ledger.Finding{
		Verdict: verdict, Result: rep.Result, Method: ledger.MethodCallback, By: who.Name, Evidence: rep.Evidence,
	})
	switch {
	case errors.Is(err, ledger.ErrStateChanged), errors.Is(err, ledger.ErrLeaseLost):
		a := answer{Tenant: rec.Tenant, Layer: &rec.Layer, Tool: rec.Tool, Key: rec.Key}
		if after != nil {
			a = answerOf(after)
		}
		a.Error = fmt.Sprintf("reconcile: record %s of tool %s changed while the report was recorded (%v); nothing changed: look at the record", rec.Key, rec.Tool, err)
		reply(w, http.StatusConflict, a)
		return
	case err != nil:
		replyError(w, http.StatusBadGateway, "cannot write the ledger: %v; send the report again", err)
		return
	}
	c.resolutions.Resolved(r.Context(), rec, after, ledger.MethodCallback)
	reply(w, http.StatusOK, answerOf(after))
}

// reconcilerOf is the reconciler whose bearer token the request carries,
// or nil.
func (c *Console) reconcilerOf(r *http.Request) *Reconciler {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil
	}
	return tokenOwner(c.reconcilers, strings.TrimSpace(tok))
}

// readReport decodes the body: one JSON object of known fields, at most
// maxReport bytes.
func readReport(w http.ResponseWriter, r *http.Request) (*report, error) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReport))
	dec.DisallowUnknownFields()
	var rep report
	if err := dec.Decode(&rep); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, err
		}
		return nil, fmt.Errorf("the body is not a report: %v; send one JSON object with tool, key, outcome and evidence", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, err
		}
		return nil, errors.New("the body holds more than one JSON value; send one report per request")
	}
	return &rep, nil
}

// check validates the report and returns its verdict.
func (rep *report) check() (ledger.Verdict, error) {
	verdict, ok := outcomes[rep.Outcome]
	switch {
	case rep.Tool == "":
		return "", errors.New("the report names no tool; add \"tool\"")
	case ledger.ValidateKey(rep.Key) != nil:
		return "", fmt.Errorf("key %q: %v", rep.Key, ledger.ValidateKey(rep.Key))
	case !ok:
		return "", fmt.Errorf("outcome %q: want succeeded, failed or not_run", rep.Outcome)
	case strings.TrimSpace(rep.Evidence) == "":
		return "", errors.New("the report gives no evidence; say in \"evidence\" what the outcome rests on (a row, a reference)")
	}
	if rep.Layer != nil {
		if err := layerOK(*rep.Layer); err != nil {
			return "", err
		}
	}
	if rep.Tenant != "" {
		if err := ledger.ValidateTenant(rep.Tenant); err != nil {
			return "", fmt.Errorf("tenant %q: %v", rep.Tenant, err)
		}
	}
	if len(rep.Result) == 0 || string(rep.Result) == "null" {
		rep.Result = nil
		return verdict, nil
	}
	if verdict == ledger.VerdictNotRun {
		return "", errors.New("a not_run report carries no result: the call did not run; leave \"result\" out")
	}
	var res mcp.CallToolResult
	if rep.Result[0] != '{' {
		return "", errors.New("result: want a CallToolResult object such as {\"content\":[{\"type\":\"text\",\"text\":\"...\"}]}")
	}
	if err := json.Unmarshal(rep.Result, &res); err != nil {
		return "", fmt.Errorf("result is not a CallToolResult: %v; send {\"content\":[...]} as the tool would answer", err)
	}
	if res.IsError != (verdict == ledger.VerdictFailed) {
		return "", fmt.Errorf("outcome %s with a result whose isError is %t: a failed call's result has isError true, a succeeded call's does not; fix one of them", rep.Outcome, res.IsError)
	}
	return verdict, nil
}

// reporterTenant is the tenant a report is for: the one it names, which
// the token must reach (404 otherwise, as for a record the token cannot
// see), or the token's only one.
func reporterTenant(w http.ResponseWriter, who *Reconciler, named string) (string, bool) {
	if named != "" {
		if !who.allows(named) {
			replyError(w, http.StatusNotFound, "%s reaches no record of tenant %s; it reports for %s", who.Name, named, strings.Join(who.Tenants, ", "))
			return "", false
		}
		return named, true
	}
	if len(who.Tenants) > 1 {
		replyError(w, http.StatusBadRequest, "%s reports for tenants %s: name the record's in \"tenant\"", who.Name, strings.Join(who.Tenants, ", "))
		return "", false
	}
	return who.Tenants[0], true
}

// reported is the record a report is about: the one of its layer, or,
// without a layer, the key's one UNKNOWN record (else its one record).
func (c *Console) reported(w http.ResponseWriter, r *http.Request, tenant string, rep *report) (*ledger.Record, bool) {
	candidates := append([]string{""}, layers...)
	if rep.Layer != nil {
		candidates = []string{*rep.Layer}
	}
	var found, unknown []*ledger.Record
	for _, l := range candidates {
		rec, err := c.opts.Store.Get(r.Context(), ledger.ID{Tenant: tenant, Layer: l, Tool: rep.Tool, Key: rep.Key})
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		if err != nil {
			replyError(w, http.StatusBadGateway, "cannot read the ledger: %v; send the report again", err)
			return nil, false
		}
		if rec.Tombstone {
			continue
		}
		found = append(found, rec)
		if ledger.RowOf(rec.State).Act == ledger.ActReconcile {
			unknown = append(unknown, rec)
		}
	}
	switch {
	case len(unknown) == 1:
		return unknown[0], true
	case len(unknown) > 1:
		var in []string
		for _, rec := range unknown {
			in = append(in, inLayer(rec.Layer))
		}
		replyError(w, http.StatusBadRequest, "key %s of tool %s is UNKNOWN in %s: name the record's \"layer\"", rep.Key, rep.Tool, strings.Join(in, " and "))
		return nil, false
	case len(found) > 0:
		return found[0], true // not UNKNOWN: the caller answers 409
	}
	where := "any layer"
	if rep.Layer != nil {
		where = inLayer(*rep.Layer)
	}
	replyError(w, http.StatusNotFound, "no record %s of tool %s in %s of tenant %s; check the key and tool the call was made with", rep.Key, rep.Tool, where, tenant)
	return nil, false
}

// unknownNow is the record id as it stands before a person settles it,
// for the resolution metrics; nil when it cannot be read (the form's own
// answer says why).
func (c *Console) unknownNow(ctx context.Context, id ledger.ID) *ledger.Record {
	rec, err := c.opts.Store.Get(ctx, id)
	if err != nil {
		return nil
	}
	return rec
}
