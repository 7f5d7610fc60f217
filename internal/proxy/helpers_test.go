//lint:file-ignore SA1019 the proxy relays logging and sampling between host and upstream; SEP-2577 deprecates them from protocol 2026-07-28, and hosts and servers on earlier versions still use them during the deprecation window

package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/internal/proxy"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/retry"
)

// upstream is a small MCP server with a bit of every feature the proxy
// relays: counted tools, a sensitive tool, tools that use sampling,
// elicitation, logging and progress, a tool that waits to be cancelled,
// resources with a template and subscriptions, a prompt and completion.
type upstream struct {
	srv *mcp.Server

	notes    atomic.Int64 // executions of add_note
	payments atomic.Int64 // executions of pay_invoice
	sessions atomic.Int64 // upstream sessions opened
	strict   atomic.Int64 // calls strict refused

	subscribed chan string   // each URI subscribed to, once the server sends its updates
	started    chan struct{} // wait_forever began
	cancelled  chan struct{} // wait_forever saw its context end

	mu      sync.Mutex // guards subs
	subs    []string   // URIs subscribed to
	unsubs  []string   // URIs unsubscribed from
	hostMsg string     // the last host progress seen: "token:progress"
}

func newUpstream() *upstream {
	u := &upstream{started: make(chan struct{}, 1), cancelled: make(chan struct{}, 1), subscribed: make(chan string, 16)}
	u.srv = mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "v1"}, &mcp.ServerOptions{
		Instructions: "notes server instructions",
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			u.mu.Lock()
			u.subs = append(u.subs, req.Params.URI)
			u.mu.Unlock()
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			u.mu.Lock()
			u.unsubs = append(u.unsubs, req.Params.URI)
			u.mu.Unlock()
			return nil
		},
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
				Values: []string{req.Params.Argument.Value + "-one", req.Params.Argument.Value + "-two"},
			}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationServerRequest) {
			u.mu.Lock()
			u.hostMsg = fmt.Sprintf("%v:%v", req.Params.ProgressToken, req.Params.Progress)
			u.mu.Unlock()
		},
	})
	type noteIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(u.srv, &mcp.Tool{Name: "add_note", Description: "adds a note"}, func(_ context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
		n := u.notes.Add(1)
		return text(fmt.Sprintf("note %d: %s", n, in.Text)), nil, nil
	})
	type payIn struct {
		Invoice string `json:"invoice"`
	}
	mcp.AddTool(u.srv, &mcp.Tool{Name: "pay_invoice", Description: "pays an invoice"}, func(_ context.Context, _ *mcp.CallToolRequest, in payIn) (*mcp.CallToolResult, any, error) {
		u.payments.Add(1)
		return text("paid " + in.Invoice), nil, nil
	})
	mcp.AddTool(u.srv, &mcp.Tool{Name: "ask_model", Description: "asks the host's model"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}},
		})
		if err != nil {
			return nil, nil, err
		}
		return text("model said: " + res.Content.(*mcp.TextContent).Text), nil, nil
	})
	type askIn struct {
		Host int `json:"host,omitempty"`
	}
	mcp.AddTool(u.srv, &mcp.Tool{Name: "ask_user", Description: "asks the host's user"}, func(ctx context.Context, req *mcp.CallToolRequest, _ askIn) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message: "favourite colour?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"colour": map[string]any{"type": "string"},
			}},
		})
		if err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("user said: %s %v", res.Action, res.Content["colour"])), nil, nil
	})
	mcp.AddTool(u.srv, &mcp.Tool{Name: "chatty", Description: "logs and reports progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "notes", Data: "working"}); err != nil {
			return nil, nil, err
		}
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Logger: "notes", Data: "too fine"}); err != nil {
			return nil, nil, err
		}
		if tok := req.Params.GetProgressToken(); tok != nil {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"}); err != nil {
				return nil, nil, err
			}
		}
		return text("done"), nil, nil
	})
	mcp.AddTool(u.srv, &mcp.Tool{Name: "wait_forever", Description: "waits to be cancelled"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		u.started <- struct{}{}
		<-ctx.Done()
		u.cancelled <- struct{}{}
		return nil, nil, ctx.Err()
	})
	// strict refuses every call as a malformed request, the way a raw
	// handler validating its own arguments does.
	u.srv.AddTool(&mcp.Tool{Name: "strict", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.strict.Add(1)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "strict: bad arguments"}
	})
	// The SDK records a subscription only after SubscribeHandler has
	// returned: an update sent in between reaches no one. So a
	// subscription is announced once the whole request is done.
	u.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if p, ok := req.GetParams().(*mcp.SubscribeParams); ok && err == nil {
				select {
				case u.subscribed <- p.URI:
				default:
				}
			}
			return res, err
		}
	})
	u.srv.AddResource(&mcp.Resource{URI: "note://1", Name: "first note", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello from note 1"}}}, nil
	})
	u.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "note://{id}", Name: "a note"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "note at " + req.Params.URI}}}, nil
	})
	u.srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["name"]}}}}, nil
	})
	return u
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// killSessions closes every upstream session, as an upstream that died
// would.
func (u *upstream) killSessions() {
	for ss := range u.srv.Sessions() {
		ss.Close()
	}
}

// transport connects a new upstream session over an in-memory pipe.
func (u *upstream) transport(ctx context.Context) (mcp.Transport, error) {
	st, ct := mcp.NewInMemoryTransports()
	if _, err := u.srv.Connect(ctx, st, nil); err != nil {
		return nil, err
	}
	u.sessions.Add(1)
	return ct, nil
}

// fastRetry keeps the tests' retries in milliseconds.
var fastRetry = &retry.Policy{MaxAttempts: 5, InitialInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond}

// newStore opens a SQLite ledger in the test's temporary folder.
func newStore(t testing.TB) ledger.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// startProxy builds a proxy in front of tr over st, closed in t.Cleanup.
func startProxy(t testing.TB, st ledger.Store, tr proxy.TransportFunc, opts *proxy.Options) *proxy.Proxy {
	t.Helper()
	var o proxy.Options
	if opts != nil {
		o = *opts
	}
	o.Transport, o.Store = tr, st
	if o.Client == nil {
		o.Client = &client.Options{Retry: fastRetry}
	}
	p, err := proxy.New(context.Background(), &o)
	if err != nil {
		t.Fatalf("proxy.New = %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return p
}

// host is an MCP host's view of the proxy: a go-sdk client that records
// what the proxy sends it.
type host struct {
	cs *mcp.ClientSession

	elicits  atomic.Int64 // elicitation requests answered
	answer   func(*mcp.ElicitRequest) *mcp.ElicitResult
	events   chan string // notifications seen, as "kind:detail"
	messages chan string // elicitation messages seen
}

// hostOptions says which capabilities the host has.
type hostOptions struct {
	elicit   func(*mcp.ElicitRequest) *mcp.ElicitResult // nil: no elicitation capability
	sampling bool
}

func connectHost(t testing.TB, p *proxy.Proxy, ho hostOptions) *host {
	t.Helper()
	h := &host{answer: ho.elicit, events: make(chan string, 64), messages: make(chan string, 16)}
	opts := &mcp.ClientOptions{
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { h.events <- "tools_changed" },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { h.events <- "prompts_changed" },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			h.events <- "updated:" + req.Params.URI
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			h.events <- fmt.Sprintf("log:%s:%v", req.Params.Level, req.Params.Data)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			h.events <- fmt.Sprintf("progress:%v:%v/%v", req.Params.ProgressToken, req.Params.Progress, req.Params.Total)
		},
	}
	if ho.elicit != nil {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.elicits.Add(1)
			h.messages <- req.Params.Message
			return h.answer(req), nil
		}
	}
	if ho.sampling {
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "hi from the host"}}, nil
		}
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := p.Server().Connect(ctx, st, nil); err != nil {
		t.Fatalf("proxy server Connect = %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "v1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("host Connect = %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	h.cs = cs
	return h
}

// waitEvent waits for a notification with the given prefix.
func (h *host) waitEvent(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-h.events:
			if strings.HasPrefix(e, prefix) {
				return e
			}
		case <-deadline:
			t.Fatalf("no %q notification reached the host", prefix)
			return ""
		}
	}
}

// call calls a tool and fails the test on a protocol error.
func (h *host) call(t *testing.T, name string, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("CallTool(%q) = %v; want a result", name, err)
	}
	return res
}

func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// replayMarker decodes the replay marker of a result; ok is false when the
// result is a fresh execution.
func replayMarker(r *mcp.CallToolResult) (client.ReplayMarker, bool) {
	raw, ok := r.Meta[client.MetaReplay]
	if !ok {
		return client.ReplayMarker{}, false
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return client.ReplayMarker{}, false
	}
	var m client.ReplayMarker
	return m, json.Unmarshal(b, &m) == nil
}

// errorMeta decodes the proxy's error marker.
func errorMeta(r *mcp.CallToolResult) (key string, state ledger.State) {
	m, _ := r.Meta[proxy.MetaError].(map[string]any)
	k, _ := m["key"].(string)
	s, _ := m["state"].(string)
	return k, ledger.State(s)
}

var errTimeout = errors.New("timed out")

// wait receives from ch or fails after a bound.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: %v", what, errTimeout)
	}
}
