package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
)

// Names of the ledger tools.
const (
	StatusTool = "ledger_status"
	ListTool   = "ledger_list"
)

// What a model reads of the ledger tools, the same over every MCP SDK.
const (
	StatusTitle       = "Ledger status"
	StatusDescription = "What became of a tool call made earlier in this session: whether it ran, " +
		"succeeded, failed, is still running, waits for approval, was denied, or has an unknown outcome, " +
		"and its recorded result. Ask by key, or by tool and arguments. Use this instead of repeating a call."
	ListTitle       = "Ledger list"
	ListDescription = "The tool calls made in this session, newest first, with key, state, attempts and times."
)

// List sizes of ledger_list.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// keyScanLimit bounds how many records of one key ledger_status reads when
// it is given a key without a tool (one per layer and tool that share it).
const keyScanLimit = 10 * ledger.MaxPageSize

// Scope is whose ledger a tool call may read: the caller's tenant and
// session. Every read of the ledger tools is confined to it.
type Scope struct {
	Tenant, Session string
}

// StatusInput is the input of ledger_status.
type StatusInput struct {
	Key       string         `json:"key,omitempty" jsonschema:"the idempotency key of the call, as given in an earlier answer; when set, arguments are ignored"`
	Tool      string         `json:"tool,omitempty" jsonschema:"the tool that was called; narrows a key lookup, and is required with arguments"`
	Arguments map[string]any `json:"arguments,omitempty" jsonschema:"the arguments of the call, to find it without its key"`
}

// StatusOutput is the structured result of ledger_status.
type StatusOutput struct {
	Found bool  `json:"found"`
	Call  *Call `json:"call,omitempty"`
	// Matches counts this session's calls that fit the question; Call is
	// the newest of them.
	Matches int `json:"matches"`
}

// ListInput is the input of ledger_list.
type ListInput struct {
	Limit int    `json:"limit,omitempty" jsonschema:"how many calls to show, newest first (default 20, at most 100)"`
	State string `json:"state,omitempty" jsonschema:"only calls in this state (ListInputSchema names each state and its meaning)"`
	// Cursor continues a list where an earlier answer's next ended.
	Cursor string `json:"cursor,omitempty" jsonschema:"the next cursor of an earlier answer, to see the calls older than those it showed"`
}

// ListInputSchema is the input schema of ledger_list: ListInput's, with
// the state property naming every state of ledger.States and what it
// means (its row's Means), so the model reads the ledger's own words.
func ListInputSchema() *jsonschema.Schema {
	s, err := jsonschema.For[ListInput](nil)
	if err != nil {
		panic("planner: the schema of ListInput: " + err.Error())
	}
	s.Properties["state"].Description = StateFilterHelp()
	return s
}

// StateFilterHelp is the description of ledger_list's state property:
// each state of ledger.States with its row's meaning.
func StateFilterHelp() string {
	var b strings.Builder
	b.WriteString("only calls in this state, one of: ")
	for i, r := range ledger.Rows() {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%s)", r.State, r.Means)
	}
	return b.String()
}

// ListOutput is the structured result of ledger_list.
type ListOutput struct {
	Calls []Call `json:"calls"`
	// More reports that older calls exist beyond Limit, and Next is the
	// cursor that lists them.
	More bool   `json:"more"`
	Next string `json:"next,omitempty"`
}

// Call is what the ledger tools show of one record. Times are RFC 3339.
type Call struct {
	Tool         string `json:"tool"`
	Key          string `json:"key"`
	State        string `json:"state"`
	Attempts     int    `json:"attempts"`
	CreatedAt    string `json:"createdAt"`
	UpdatedAt    string `json:"updatedAt"`
	ErrorKind    string `json:"errorKind,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	Compacted    bool   `json:"compacted,omitempty"`
	Expired      bool   `json:"expired,omitempty"`
	// Arguments (redacted as stored) and Result (the CallToolResult as
	// first returned) are shown by ledger_status only.
	Arguments any `json:"arguments,omitempty"`
	Result    any `json:"result,omitempty"`
	// Reconciled says how an UNKNOWN call was settled, when it was; by
	// ledger_status only, with Findings (every reconciliation attempt
	// kept, oldest first) and, while it is UNKNOWN, when the next
	// attempt is due.
	Reconciled      *ledger.Resolution  `json:"reconciled,omitempty"`
	Findings        []ledger.Resolution `json:"findings,omitempty"`
	NextReconcileAt string              `json:"nextReconcileAt,omitempty"`
}

func newCall(r *ledger.Record, detail bool) Call {
	c := Call{
		Tool:         r.Tool,
		Key:          r.Key,
		State:        string(r.State),
		Attempts:     r.Attempts,
		CreatedAt:    stamp(r.CreatedAt),
		UpdatedAt:    stamp(r.UpdatedAt),
		ErrorKind:    r.ErrorKind,
		ErrorMessage: r.ErrorMessage,
		Compacted:    r.Compacted,
		Expired:      r.Tombstone,
	}
	if detail {
		if len(r.Arguments) > 0 {
			c.Arguments = r.Arguments
		}
		if len(r.Result) > 0 {
			c.Result = r.Result
		}
		c.Reconciled, c.Findings = r.Reconciled, r.Findings
		if ledger.RowOf(r.State).Act == ledger.ActReconcile && !r.ReconcileAt.IsZero() {
			c.NextReconcileAt = stamp(r.ReconcileAt)
		}
	}
	return c
}

var (
	errNoSession = errors.New("planner: the ledger tools need a session; this connection has none")
	errNoTarget  = errors.New("planner: ledger_status needs a key, or a tool and its arguments")
)

// Tools answers the ledger tools, ledger_status and ledger_list, in
// SDK-neutral terms: an MCP adapter (package planner/ledgertools for
// go-sdk) serves them. Both are read-only and see only the records of the
// Scope they are given: a record of another tenant or session is "not
// found", even by its exact key.
type Tools struct {
	Store ledger.Store
	// Exclude lists, per tool, the extra top-level argument fields the
	// calls' fingerprints leave out (client.Options.Exclude of the client
	// that made them). ledger_status by arguments needs the same list to
	// find a call whose excluded fields differ.
	Exclude map[string][]string
	// Layer is the layer whose records the tools read (default
	// ledger.LayerClient): the agent's own calls, not a server guard's
	// records of them in a shared ledger.
	Layer string
	// Now is the clock a lapsed approval is read against (time.Now when
	// nil): a call whose approval expired reads REJECTED at once, as it
	// does in agentctl and the console (ledger.AsRead).
	Now func() time.Time
}

// store is the ledger as it reads now (ledger.AsReadStore).
func (t *Tools) store() ledger.Store { return ledger.AsReadStore(t.Store, t.Now) }

func (t *Tools) layer() string {
	if t.Layer == "" {
		return ledger.LayerClient
	}
	return t.Layer
}

func checkScope(sc Scope) error {
	if err := ledger.ValidateTenant(sc.Tenant); err != nil {
		return fmt.Errorf("planner: scope: %w", err)
	}
	// List treats an empty session as "every session"; refusing it here
	// is what keeps one session's calls from another.
	if sc.Session == "" {
		return errNoSession
	}
	return nil
}

// mine reports whether r belongs to the caller. Stores already scope their
// reads; this repeats the check so that no Store bug can leak a record.
func mine(r *ledger.Record, tenant, session string) bool {
	return r != nil && r.Tenant == tenant && r.Session == session
}

// Status answers ledger_status: the text the model reads and the
// structured result.
func (t *Tools) Status(ctx context.Context, sc Scope, in StatusInput) (string, StatusOutput, error) {
	if err := checkScope(sc); err != nil {
		return "", StatusOutput{}, err
	}
	tenant, session := sc.Tenant, sc.Session
	var (
		matches []*ledger.Record
		err     error
	)
	switch {
	case in.Key != "":
		if err := ledger.ValidateKey(in.Key); err != nil {
			return "", StatusOutput{}, fmt.Errorf("planner: ledger_status: %w", err)
		}
		matches, err = t.byKey(ctx, tenant, session, in.Tool, in.Key)
	case in.Tool != "":
		matches, err = t.byArguments(ctx, tenant, session, in.Tool, in.Arguments)
	default:
		return "", StatusOutput{}, errNoTarget
	}
	if err != nil {
		return "", StatusOutput{}, err
	}
	if len(matches) == 0 {
		return notFound(in), StatusOutput{}, nil
	}
	r := matches[0]
	c := newCall(r, true)
	out := StatusOutput{Found: true, Call: &c, Matches: len(matches)}
	return statusText(r, len(matches)), out, nil
}

func (t *Tools) byKey(ctx context.Context, tenant, session, tool, key string) ([]*ledger.Record, error) {
	if tool != "" {
		r, err := t.store().Get(ctx, ledger.ID{Tenant: tenant, Layer: t.layer(), Tool: tool, Key: key})
		if errors.Is(err, ledger.ErrNotFound) || err == nil && !mine(r, tenant, session) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("planner: ledger_status: %w", err)
		}
		return []*ledger.Record{r}, nil
	}
	var found []*ledger.Record
	f := ledger.Filter{Tenant: tenant, Layer: t.layer(), Session: session, Key: key, Limit: ledger.MaxPageSize}
	for seen := 0; seen < keyScanLimit; {
		page, err := t.store().List(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("planner: ledger_status: %w", err)
		}
		for _, r := range page.Records {
			if r.Key == key && mine(r, tenant, session) {
				found = append(found, r)
			}
		}
		seen += len(page.Records)
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	return found, nil
}

func (t *Tools) byArguments(ctx context.Context, tenant, session, tool string, arguments map[string]any) ([]*ledger.Record, error) {
	raw, err := json.Marshal(arguments)
	if err != nil {
		return nil, fmt.Errorf("planner: ledger_status: arguments: %w", err)
	}
	fp, err := args.Fingerprint(raw, t.Exclude[tool]...)
	if err != nil {
		return nil, fmt.Errorf("planner: ledger_status: %w", err)
	}
	recs, err := t.store().FindRecent(ctx, ledger.RecentQuery{
		Tenant: tenant, Layer: t.layer(), Session: session, Tool: tool, Fingerprint: fp,
	})
	if err != nil {
		return nil, fmt.Errorf("planner: ledger_status: %w", err)
	}
	var found []*ledger.Record
	for _, r := range recs {
		if mine(r, tenant, session) && r.Tool == tool {
			found = append(found, r)
		}
	}
	return found, nil
}

// List answers ledger_list: the text the model reads and the structured
// result.
func (t *Tools) List(ctx context.Context, sc Scope, in ListInput) (string, ListOutput, error) {
	if err := checkScope(sc); err != nil {
		return "", ListOutput{}, err
	}
	tenant, session := sc.Tenant, sc.Session
	f := ledger.Filter{Tenant: tenant, Layer: t.layer(), Session: session, Limit: in.Limit, Cursor: in.Cursor}
	var err error
	switch {
	case f.Limit <= 0:
		f.Limit = DefaultListLimit
	case f.Limit > MaxListLimit:
		f.Limit = MaxListLimit
	}
	if in.State != "" {
		if f.State, err = ledger.ParseState(in.State); err != nil {
			return "", ListOutput{}, fmt.Errorf("planner: ledger_list: %w", err)
		}
	}
	page, err := t.store().List(ctx, f)
	if err != nil {
		return "", ListOutput{}, fmt.Errorf("planner: ledger_list: %w", err)
	}
	out := ListOutput{Calls: []Call{}, More: page.Next != "", Next: page.Next}
	for _, r := range page.Records {
		if mine(r, tenant, session) {
			out.Calls = append(out.Calls, newCall(r, false))
		}
	}
	return listText(out), out, nil
}
