package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
)

// Wire names of the mcpledger conventions that the server reads and
// advertises.
const (
	// MetaKey is the _meta entry that carries the idempotency key.
	MetaKey = wire.MetaKey
	// ArgKey is the argument that carries the key for tools whose input
	// schema declares it ("write" does, "write_nokey" does not).
	ArgKey = wire.ArgKey
	// CapabilityKey is the experimental capability an Idempotent server
	// advertises.
	CapabilityKey = wire.Capability
	// ControlTool scripts faults from another process: arguments
	// {"faults": [Fault, ...]}.
	ControlTool = "mcptest_fault"
)

// Options configure a Server. A nil *Options means the zero value.
type Options struct {
	// Idempotent advertises capabilities.experimental[CapabilityKey] =
	// {"version":1,"retentionSeconds":86400} and makes the server honour
	// keys itself: a repeated key gets the first execution's result without
	// a second execution, and a key reused with other arguments gets -31001.
	// This is a minimal stand-in for the server/ middleware (no retention,
	// no in-progress answers: concurrent same-key calls queue on one lock),
	// enough to exercise a client against a key-aware server.
	Idempotent bool `json:"idempotent,omitempty"`
	// StateFile, when set, keeps execution counts, first results and the
	// fault script in an append-only JSON-lines file (fsynced per change),
	// so they survive a restart of the serving process and can be read and
	// scripted from the test process by a Server built on the same file.
	StateFile string `json:"stateFile,omitempty"`
}

// Server is a fault-injecting MCP server for tests. Its tools:
//
//   - "write" {"id": string, "amount": number, "idempotency_key"?: string}:
//     a non-idempotent write; every execution is counted under its key.
//   - "write_nokey" {"id": string, "amount": number}: the same without the
//     key argument (an unexpected idempotency_key is -32602).
//   - "read" {}: read-only (readOnlyHint), returns the total executions;
//     never counted, never faulted.
//   - ControlTool: appends faults to the script.
//
// A call's key is _meta[MetaKey], else the idempotency_key argument, else
// "". Faults apply to write calls only, one per call, in script order.
type Server struct {
	opts Options
	srv  *mcp.Server

	mu       sync.Mutex                    // guards the fields below
	st       *state                        // calls so far (mirrors the journal when there is one)
	jl       *journal                      // nil without a StateFile
	changed  chan struct{}                 // closed and replaced on every execution
	closers  map[*mcp.ServerSession]func() // cut an in-memory session's pipe
	stdio    func()                        // cuts the stdio pipes in a child process
	outcomes map[string]Fault              // HTTP answers to replace, by request id
	releases map[string]chan struct{}      // closed to end HTTP stalls, by session id
	released bool                          // every HTTP stall ends at once (the server shut down)
	stalled  chan string                   // the key of each call entering a stall
	child    bool                          // serving stdio in a re-executed test binary
}

// New builds a Server. It panics when the state file cannot be opened or
// read: a broken fixture, not a condition to test.
func New(opts *Options) *Server {
	s := &Server{
		st:       newState(),
		changed:  make(chan struct{}),
		closers:  map[*mcp.ServerSession]func(){},
		outcomes: map[string]Fault{},
		releases: map[string]chan struct{}{},
		stalled:  make(chan string, 64),
	}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.StateFile != "" {
		jl, err := openJournal(s.opts.StateFile)
		if err != nil {
			panic(err)
		}
		s.jl = jl
		if err := s.update(func(*state) []event { return nil }); err != nil {
			panic(err)
		}
	}

	var sopts *mcp.ServerOptions
	if s.opts.Idempotent {
		sopts = &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{
			Experimental: map[string]any{CapabilityKey: map[string]any{"version": 1, "retentionSeconds": 86400}},
		}}
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "v1"}, sopts)
	s.srv.AddTool(&mcp.Tool{
		Name:        "write",
		Description: "Records a write of amount under id. Not idempotent by itself.",
		InputSchema: writeSchema(true),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.write(ctx, req, true)
	})
	s.srv.AddTool(&mcp.Tool{
		Name:        "write_nokey",
		Description: "Records a write of amount under id; has no idempotency_key argument.",
		InputSchema: writeSchema(false),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.write(ctx, req, false)
	})
	s.srv.AddTool(&mcp.Tool{
		Name:        "read",
		Description: "Returns how many writes executed.",
		InputSchema: map[string]any{"type": "object"},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := s.TotalExecutions()
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d executions", n)}},
			StructuredContent: map[string]any{"total": n},
		}, nil
	})
	s.srv.AddTool(&mcp.Tool{
		Name:        ControlTool,
		Description: "Test control: appends faults to the script.",
		InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"faults": map[string]any{"type": "array"}},
			"required":   []string{"faults"},
		},
	}, s.control)
	return s
}

// MCP returns the go-sdk server, for callers that connect their own
// transports or add tools.
func (s *Server) MCP() *mcp.Server { return s.srv }

func writeSchema(withKey bool) map[string]any {
	props := map[string]any{
		"id":     map[string]any{"type": "string"},
		"amount": map[string]any{"type": "number"},
	}
	if withKey {
		props[ArgKey] = map[string]any{"type": "string"}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             []string{"id", "amount"},
		"additionalProperties": false,
	}
}

// writeArgs are the arguments of the write tools.
type writeArgs struct {
	ID             *string  `json:"id"`
	Amount         *float64 `json:"amount"`
	IdempotencyKey *string  `json:"idempotency_key"`
}

// decodeWrite checks the arguments strictly, as a schema-validating server
// would, and returns the call's key and its canonical business arguments.
func decodeWrite(req *mcp.CallToolRequest, withKey bool) (in writeArgs, key, canon string, err error) {
	dec := json.NewDecoder(bytes.NewReader(req.Params.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcptest: invalid arguments: " + err.Error()}
	}
	if in.ID == nil || in.Amount == nil {
		return in, "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcptest: id and amount are required"}
	}
	if !withKey && in.IdempotencyKey != nil {
		return in, "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcptest: write_nokey has no idempotency_key argument"}
	}
	if k, ok := req.Params.Meta[MetaKey].(string); ok {
		key = k
	} else if in.IdempotencyKey != nil {
		key = *in.IdempotencyKey
	}
	b, err := json.Marshal([]any{*in.ID, *in.Amount})
	if err != nil {
		return in, "", "", fmt.Errorf("mcptest: canonical arguments: %w", err)
	}
	return in, key, string(b), nil
}

// write runs one call of a write tool: record the key, take the next fault,
// answer before executing or execute (or replay), then apply the fault's
// after-execute part.
func (s *Server) write(ctx context.Context, req *mcp.CallToolRequest, withKey bool) (*mcp.CallToolResult, error) {
	in, key, canon, err := decodeWrite(req, withKey)
	if err != nil {
		return nil, err
	}
	httpID := ""
	if req.Extra != nil && req.Extra.Header != nil {
		httpID = req.Extra.Header.Get(requestIDHeader)
	}

	var (
		fault  Fault
		faulty bool
		res    *mcp.CallToolResult
		answer error
	)
	err = s.update(func(st *state) []event {
		events := []event{{Seen: &key}}
		if len(st.faults) > 0 {
			fault, faulty = st.faults[0], true
			events = append(events, event{Pop: true})
		}
		if faulty {
			if fault.Kind == KindHTTPStatus && httpID == "" {
				answer = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcptest: HTTP fault on a non-HTTP transport"}
				return events
			}
			if fault.preExecute() {
				answer = preExecuteAnswer(fault)
				return events
			}
		}
		if s.opts.Idempotent && key != "" {
			if first, ok := st.first[key]; ok {
				if first.Args != canon {
					answer = server.Error(ledger.CodeKeyReused, ledger.ReasonKeyReused,
						"mcptest: idempotency key reused with different arguments", 0)
					return events
				}
				res, answer = decodeResult(first.Result)
				return events
			}
		}
		res = writeResult(*in.ID, *in.Amount, key, st.execs[key]+1, faulty && fault.Kind == KindToolError)
		raw, err := json.Marshal(res)
		if err != nil {
			answer = fmt.Errorf("mcptest: encode result: %w", err)
			return events
		}
		return append(events, event{Exec: &execEvent{Key: key, firstExec: firstExec{Args: canon, Result: raw}}})
	})
	if err != nil {
		return nil, err
	}
	if faulty && fault.Kind == KindHTTPStatus && httpID != "" {
		s.setOutcome(httpID, fault)
	}
	if answer != nil {
		return nil, answer
	}
	if !faulty {
		return res, nil
	}

	switch fault.Kind {
	case KindExitAfterCommit:
		if s.child {
			// The execution is on disk (update fsyncs): die without a word.
			os.Exit(ExitCode)
		}
		s.drop(req.Session, httpID, fault)
	case KindDropAfterExecute:
		s.drop(req.Session, httpID, fault)
	case KindStallAfterExecute:
		select {
		case s.stalled <- key:
		default:
		}
		var timeout <-chan time.Time
		if fault.StallMs > 0 {
			t := time.NewTimer(time.Duration(fault.StallMs) * time.Millisecond)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ctx.Done():
		case <-timeout:
		case <-s.stallRelease(req, httpID):
		}
	}
	return res, nil
}

// preExecuteAnswer is the error a fault answers with instead of executing.
func preExecuteAnswer(f Fault) error {
	switch f.Kind {
	case KindFailTransient:
		return server.Error(ledger.CodeInProgress, ledger.ReasonInProgress,
			"mcptest: operation in progress (injected)", time.Duration(f.RetryAfterMs)*time.Millisecond)
	case KindProtocolError:
		reason := map[int64]string{
			ledger.CodeKeyReused:      ledger.ReasonKeyReused,
			ledger.CodeInProgress:     ledger.ReasonInProgress,
			ledger.CodeOutcomeUnknown: ledger.ReasonOutcomeUnknown,
			ledger.CodeKeyRequired:    ledger.ReasonKeyRequired,
		}[f.Code]
		if reason != "" {
			return server.Error(f.Code, reason, "mcptest: injected protocol error", 0)
		}
		return &jsonrpc.Error{Code: f.Code, Message: "mcptest: injected protocol error"}
	}
	// An HTTP status before execution: the HTTP layer replaces this answer.
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcptest: rejected by the HTTP layer"}
}

func writeResult(id string, amount float64, key string, execution int, toolErr bool) *mcp.CallToolResult {
	if toolErr {
		return &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("write %s refused (injected tool error)", id)}},
			IsError: true,
		}
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("wrote %s amount %v (execution %d of key %q)", id, amount, execution, key)}},
		StructuredContent: map[string]any{
			"id": id, "amount": amount, "key": key, "execution": execution,
		},
	}
}

func decodeResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("mcptest: decode stored result: %w", err)
	}
	return &res, nil
}

// drop closes the call's connection without an answer: the HTTP layer
// drops the request's TCP connection; otherwise the session's pipe is cut.
func (s *Server) drop(ss *mcp.ServerSession, httpID string, f Fault) {
	if httpID != "" {
		s.setOutcome(httpID, f)
		return
	}
	s.mu.Lock()
	cut := s.closers[ss]
	if s.child {
		cut = s.stdio
	}
	s.mu.Unlock()
	if cut != nil {
		cut()
	}
}

func (s *Server) control(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Faults []Fault `json:"faults"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcptest: " + err.Error()}
	}
	if err := s.script(in.Faults); err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("scripted %d faults", len(in.Faults))}}}, nil
}
