//lint:file-ignore SA1019 the proxy relays logging and sampling between host and upstream; SEP-2577 deprecates them from protocol 2026-07-28, and hosts and servers on earlier versions still use them during the deprecation window

package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/internal/proxy"
)

// enumSchema asks for every enum form of SEP-1330 (untitled, titled with
// oneOf, legacy enumNames, multi-select of enum and of anyOf) and a default
// of SEP-1034. With typedItems the titled multi-select's items say
// "type": "string" next to "anyOf", as the official conformance suite
// sends it; go-sdk's client refuses that form, and its server refuses an
// accepted answer to it.
func enumSchema(typedItems bool) map[string]any {
	titled := []any{
		map[string]any{"const": "v1", "title": "First"},
		map[string]any{"const": "v2", "title": "Second"},
	}
	items := map[string]any{"anyOf": titled}
	if typedItems {
		items["type"] = "string"
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"untitled": map[string]any{"type": "string", "enum": []any{"a", "b"}},
			"titled":   map[string]any{"type": "string", "oneOf": titled},
			"legacy":   map[string]any{"type": "string", "enum": []any{"x", "y"}, "enumNames": []any{"Ex", "Why"}},
			"multi": map[string]any{"type": "array", "minItems": 1.0,
				"items": map[string]any{"type": "string", "enum": []any{"a", "b"}}},
			"titledMulti": map[string]any{"type": "array", "items": items},
			"name":        map[string]any{"type": "string", "default": "anonymous"},
		},
	}
}

// barrier lets n callers through together, so the tools of several host
// sessions are in flight at once.
type barrier struct {
	n     int
	mu    sync.Mutex // guards count
	count int
	open  chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, open: make(chan struct{})} }

func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	b.count++
	if b.count == b.n {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("barrier: %d of %d arrived: %w", b.count, b.n, ctx.Err())
	}
}

// httpUpstream serves, over stateful streamable HTTP on 127.0.0.1, three
// tools that talk to their caller while they run: log_lines, progress and
// ask. Each sends a first message, waits for the same tool of every host
// session to get there, then sends a second: the sessions' messages
// interleave.
type httpUpstream struct {
	srv   *mcp.Server
	url   string
	execs atomic.Int64 // tool executions
	// answers are the accepted elicitation answers, by tag, as they came;
	// actions the actions the tools got.
	mu      sync.Mutex // guards answers and actions
	answers map[string]map[string]any
	actions map[string][]string

	// seen counts, by "tag/kind", the messages a host received; a tool
	// returns only once its host has its messages, so each one must have
	// come while the call was open.
	seen *seen
}

// seen signals, per name, each message received.
type seen struct {
	mu sync.Mutex // guards chans
	ch map[string]chan struct{}
}

func (s *seen) of(name string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch[name] == nil {
		s.ch[name] = make(chan struct{}, 64)
	}
	return s.ch[name]
}

func (s *seen) add(name string) { s.of(name) <- struct{}{} }

// wait waits for n messages under name.
func (s *seen) wait(ctx context.Context, name string, n int) error {
	for i := range n {
		select {
		case <-s.of(name):
		case <-ctx.Done():
			return fmt.Errorf("%s: %d of %d messages reached the host: %w", name, i, n, ctx.Err())
		}
	}
	return nil
}

func startHTTPUpstream(t *testing.T, hosts int) *httpUpstream {
	t.Helper()
	u := &httpUpstream{answers: map[string]map[string]any{}, actions: map[string][]string{}, seen: &seen{ch: map[string]chan struct{}{}}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "chatter", Version: "v1"}, nil)
	u.srv = srv
	srv.AddPrompt(&mcp.Prompt{Name: "first"}, prompt)
	bars := map[string]*barrier{"log_lines": newBarrier(hosts), "progress": newBarrier(hosts), "ask": newBarrier(hosts)}
	type in struct {
		Tag string `json:"tag"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "log_lines"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		u.execs.Add(1)
		for i := 1; i <= 2; i++ {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("%s:log%d", a.Tag, i)}); err != nil {
				return nil, nil, err
			}
			if i == 1 {
				if err := bars["log_lines"].wait(ctx); err != nil {
					return nil, nil, err
				}
			}
		}
		if err := u.seen.wait(ctx, a.Tag+"/log", 2); err != nil {
			return nil, nil, err
		}
		return text("logged " + a.Tag), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		u.execs.Add(1)
		tok := req.Params.GetProgressToken()
		if tok == nil {
			return nil, nil, fmt.Errorf("progress: no progress token")
		}
		for i := 1; i <= 2; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 2, Message: fmt.Sprintf("%s:step%d", a.Tag, i)}); err != nil {
				return nil, nil, err
			}
			if i == 1 {
				if err := bars["progress"].wait(ctx); err != nil {
					return nil, nil, err
				}
			}
		}
		if err := u.seen.wait(ctx, a.Tag+"/progress", 2); err != nil {
			return nil, nil, err
		}
		return text("progressed " + a.Tag), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		u.execs.Add(1)
		if err := bars["ask"].wait(ctx); err != nil {
			return nil, nil, err
		}
		// First the form go-sdk's client refuses (the host declines it:
		// go-sdk's server would refuse an accepted answer), then one it
		// takes, accepted.
		first, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: a.Tag + ": pick", RequestedSchema: enumSchema(true)})
		if err != nil {
			return nil, nil, err
		}
		second, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: a.Tag + ": pick again", RequestedSchema: enumSchema(false)})
		if err != nil {
			return nil, nil, err
		}
		u.mu.Lock()
		u.actions[a.Tag] = []string{first.Action, second.Action}
		u.mu.Unlock()
		return text(fmt.Sprintf("%s: %s, %s", a.Tag, first.Action, second.Action)), nil, nil
	})
	// The answers as they came over the wire: Elicit itself fills in the
	// schema's defaults.
	srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if er, ok := res.(*mcp.ElicitResult); ok && er.Action == "accept" {
				msg := req.GetParams().(*mcp.ElicitParams).Message
				u.mu.Lock()
				u.answers[strings.TrimSuffix(msg, ": pick again")] = maps.Clone(er.Content)
				u.mu.Unlock()
			}
			return res, err
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	u.url = ts.URL
	return u
}

func prompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
}

// httpHost is one host session on the proxy over streamable HTTP, with
// what the proxy sent it.
type httpHost struct {
	tag string
	cs  *mcp.ClientSession

	mu       sync.Mutex // guards the slices below
	logs     []string
	progress []string
	asked    []string         // elicitation messages
	schemas  []map[string]any // their requested schemas, as received

	promptsChanged chan struct{} // a prompts/list_changed arrived
}

func (h *httpHost) answer() map[string]any {
	return map[string]any{"untitled": "b", "titled": "v2", "legacy": "y", "multi": []any{"a", "b"}, "titledMulti": []any{"v1"}, "who": h.tag}
}

// connectHTTPHost connects a host session. Without standalone, it opens no
// stream for messages outside its requests (the GET stream): whatever it
// gets came on the stream of one of its requests.
func connectHTTPHost(t *testing.T, url, tag string, meta mcp.Meta, standalone bool, sn *seen) *httpHost {
	t.Helper()
	h := &httpHost{tag: tag, promptsChanged: make(chan struct{}, 8)}
	signal := func(msg, kind string) {
		if sn != nil {
			from, _, _ := strings.Cut(msg, ":")
			sn.add(from + "/" + kind)
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "host-" + tag, Version: "v1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			h.mu.Lock()
			h.logs = append(h.logs, fmt.Sprint(req.Params.Data))
			h.mu.Unlock()
			signal(fmt.Sprint(req.Params.Data), "log")
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			h.promptsChanged <- struct{}{}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.progress = append(h.progress, fmt.Sprintf("%v %s", req.Params.ProgressToken, req.Params.Message))
			h.mu.Unlock()
			signal(req.Params.Message, "progress")
		},
		// Set for the capability; the middleware below answers instead.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, fmt.Errorf("host %s: the SDK's elicitation handler was called", tag)
		},
	})
	// The host reads the request as it came, ahead of go-sdk's client,
	// which would refuse the titled multi-select (a host written with the
	// TypeScript SDK takes it).
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			er, ok := req.(*mcp.ElicitRequest)
			if !ok {
				return next(ctx, method, req)
			}
			schema, _ := er.Params.RequestedSchema.(map[string]any)
			h.mu.Lock()
			h.asked = append(h.asked, er.Params.Message)
			h.schemas = append(h.schemas, schema)
			h.mu.Unlock()
			if !strings.HasSuffix(er.Params.Message, "again") {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			// The answer leaves the default out: the upstream, not the
			// proxy, decides what a default means.
			a := h.answer()
			delete(a, "who")
			return &mcp.ElicitResult{Action: "accept", Content: a}, nil
		}
	})
	if meta != nil {
		c.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "initialize" {
					req.GetParams().SetMeta(meta)
				}
				return next(ctx, method, req)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: !standalone}, nil)
	if err != nil {
		t.Fatalf("host %s: Connect = %v", tag, err)
	}
	t.Cleanup(func() { cs.Close() })
	h.cs = cs
	return h
}

// serveProxy serves p over streamable HTTP on 127.0.0.1.
func serveProxy(t *testing.T, p *proxy.Proxy) string {
	t.Helper()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.Server() }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

func httpTransport(url string) proxy.TransportFunc {
	return func(context.Context) (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil
	}
}

// TestHostSessionsSeeOnlyTheirOwn: three host sessions on one proxy, over
// real streamable HTTP on both sides, each call a logging, a progress and
// an eliciting tool while the others' are in flight. Each host gets its
// own log lines, its own progress and its own questions, schemas as sent,
// and nothing of the others'; the upstream gets each host's answer as
// given. The hosts open no stream for messages outside their requests,
// and each tool returns only once its host has its messages: each message
// came with the host request it belongs to.
func TestHostSessionsSeeOnlyTheirOwn(t *testing.T) {
	const n = 3
	up := startHTTPUpstream(t, n)
	p := startProxy(t, newStore(t), httpTransport(up.url), nil)
	url := serveProxy(t, p)

	hosts := make([]*httpHost, n)
	for i := range hosts {
		hosts[i] = connectHTTPHost(t, url, fmt.Sprintf("h%d", i), nil, false, up.seen)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- h.run(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	if got := up.execs.Load(); got != 3*n {
		t.Errorf("upstream tool executions = %d; want %d", got, 3*n)
	}
	for _, h := range hosts {
		h.mu.Lock()
		if want := []string{h.tag + ":log1", h.tag + ":log2"}; !slices.Equal(h.logs, want) {
			t.Errorf("host %s got log lines %q; want %q", h.tag, h.logs, want)
		}
		if want := []string{"p-" + h.tag + " " + h.tag + ":step1", "p-" + h.tag + " " + h.tag + ":step2"}; !slices.Equal(h.progress, want) {
			t.Errorf("host %s got progress %q; want %q", h.tag, h.progress, want)
		}
		if want := []string{h.tag + ": pick", h.tag + ": pick again"}; !slices.Equal(h.asked, want) {
			t.Errorf("host %s was asked %q; want %q", h.tag, h.asked, want)
		}
		for i, typed := range []bool{true, false} {
			if i < len(h.schemas) && !sameJSON(t, h.schemas[i], enumSchema(typed)) {
				t.Errorf("host %s got the schema\n%s\nwant it as sent:\n%s", h.tag, mustJSON(t, h.schemas[i]), mustJSON(t, enumSchema(typed)))
			}
		}
		h.mu.Unlock()
		up.mu.Lock()
		got, actions := up.answers[h.tag], up.actions[h.tag]
		up.mu.Unlock()
		if want := []string{"decline", "accept"}; !slices.Equal(actions, want) {
			t.Errorf("the upstream got %s's actions %q; want %q", h.tag, actions, want)
		}
		want := h.answer()
		delete(want, "who")
		if !sameJSON(t, got, want) {
			t.Errorf("the upstream got %s's answer %s; want it as given, %s", h.tag, mustJSON(t, got), mustJSON(t, want))
		}
	}
}

// TestNotificationsOutsideCallsReachEveryHost: a notification the upstream
// sends outside any request (a list change) reaches every host session, on
// its stream for such messages, however the host's upstream session came
// to be connected (here: by a logging/setLevel).
func TestNotificationsOutsideCallsReachEveryHost(t *testing.T) {
	up := startHTTPUpstream(t, 1)
	p := startProxy(t, newStore(t), httpTransport(up.url), nil)
	url := serveProxy(t, p)
	var hosts []*httpHost
	for i := range 3 {
		h := connectHTTPHost(t, url, fmt.Sprintf("h%d", i), nil, true, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := h.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"})
		cancel()
		if err != nil {
			t.Fatalf("host %s: logging/setLevel = %v", h.tag, err)
		}
		hosts = append(hosts, h)
	}
	up.srv.AddPrompt(&mcp.Prompt{Name: "second"}, prompt)
	for _, h := range hosts {
		select {
		case <-h.promptsChanged:
		case <-time.After(10 * time.Second):
			t.Errorf("host %s got no prompts/list_changed", h.tag)
		}
	}
}

// run sets the log level and calls the three tools in turn.
func (h *httpHost) run(ctx context.Context) error {
	if err := h.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		return fmt.Errorf("host %s: logging/setLevel = %v", h.tag, err)
	}
	calls := []*mcp.CallToolParams{
		{Name: "log_lines", Arguments: map[string]any{"tag": h.tag}},
		{Name: "progress", Arguments: map[string]any{"tag": h.tag}, Meta: mcp.Meta{"progressToken": "p-" + h.tag}},
		{Name: "ask", Arguments: map[string]any{"tag": h.tag}},
	}
	for _, c := range calls {
		res, err := h.cs.CallTool(ctx, c)
		if err != nil {
			return fmt.Errorf("host %s: CallTool(%s) = %v", h.tag, c.Name, err)
		}
		if res.IsError {
			return fmt.Errorf("host %s: CallTool(%s) = error result %q", h.tag, c.Name, resultText(res))
		}
	}
	return nil
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameJSON compares a and b as JSON values.
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(mustJSON(t, a)), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(mustJSON(t, b)), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// TestLedgerSessionPerHostSession: over HTTP, two host sessions calling
// the same tool with the same arguments are two operations unless they
// share a ledger session: by Options.Session, or by naming the same one in
// initialize's _meta.
func TestLedgerSessionPerHostSession(t *testing.T) {
	cases := []struct {
		name    string
		session string   // Options.Session
		meta    mcp.Meta // each host's initialize _meta
		want    int64    // executions of the two calls
	}{
		{name: "own session each", want: 2},
		{name: "Options.Session shared", session: "agent-7", want: 1},
		{name: "named by the hosts", meta: mcp.Meta{proxy.MetaSession: "conversation-42"}, want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream()
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv }, nil))
			t.Cleanup(ts.Close)
			p := startProxy(t, newStore(t), httpTransport(ts.URL), &proxy.Options{Session: tc.session, Client: &client.Options{Retry: fastRetry}})
			url := serveProxy(t, p)
			var replays int
			for i := range 2 {
				h := connectHTTPHost(t, url, fmt.Sprintf("h%d", i), tc.meta, true, nil)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"text": "same"}})
				cancel()
				if err != nil {
					t.Fatalf("host %d: CallTool(add_note) = %v", i, err)
				}
				if _, ok := replayMarker(res); ok {
					replays++
				}
			}
			if got := u.notes.Load(); got != tc.want {
				t.Errorf("add_note executions = %d; want %d", got, tc.want)
			}
			if want := 2 - int(tc.want); replays != want {
				t.Errorf("replays = %d; want %d", replays, want)
			}
		})
	}
}

// TestHostSessionNameRejected: a session name that breaks the key rules is
// refused with a message naming the rules, and nothing runs.
func TestHostSessionNameRejected(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	url := serveProxy(t, p)
	h := connectHTTPHost(t, url, "bad", mcp.Meta{proxy.MetaSession: "has spaces"}, true, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"text": "x"}})
	if err == nil || !strings.Contains(err.Error(), "[A-Za-z0-9._:~-]") {
		t.Fatalf("CallTool with a bad session name = %v; want an error naming the key rules", err)
	}
	if got := u.notes.Load(); got != 0 {
		t.Errorf("add_note executions = %d; want 0", got)
	}
}

// TestMessagesBeforeTheAnswerReachTheHost: a tool that logs and reports
// progress and returns at once. The SDK hands the proxy the upstream's
// answer ahead of the notifications read before it; the proxy must relay
// those first, while the host's request stream is open: this host has no
// other stream, so a message relayed late would be lost.
func TestMessagesBeforeTheAnswerReachTheHost(t *testing.T) {
	const calls = 20
	for _, tc := range []struct {
		name string
		tr   func(t *testing.T, u *upstream) proxy.TransportFunc
	}{
		{"upstream over streamable HTTP", func(t *testing.T, u *upstream) proxy.TransportFunc {
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv }, nil))
			t.Cleanup(ts.Close)
			return httpTransport(ts.URL)
		}},
		{"upstream in memory", func(_ *testing.T, u *upstream) proxy.TransportFunc { return u.transport }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream()
			p := startProxy(t, newStore(t), tc.tr(t, u), nil)
			got := &seen{ch: map[string]chan struct{}{}}
			// A host that counts what it gets, with no stream outside its
			// requests.
			c := mcp.NewClient(&mcp.Implementation{Name: "counting-host", Version: "v1"}, &mcp.ClientOptions{
				LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) { got.add("log") },
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
					got.add("progress")
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: serveProxy(t, p), MaxRetries: -1, DisableStandaloneSSE: true}, nil)
			if err != nil {
				t.Fatalf("Connect = %v", err)
			}
			defer cs.Close()
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				t.Fatalf("logging/setLevel = %v", err)
			}
			for i := range calls {
				// A new key each time: every call runs.
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chatty", Meta: mcp.Meta{"progressToken": i, client.MetaKey: fmt.Sprintf("chatty-%d", i)}})
				if err != nil || res.IsError {
					t.Fatalf("CallTool(chatty) = %v, %v", res, err)
				}
			}
			if err := got.wait(ctx, "log", calls); err != nil {
				t.Error(err)
			}
			if err := got.wait(ctx, "progress", calls); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestConfirmationAsksTheCallingHost: three host sessions over streamable
// HTTP call a tool the policy asks about at once; the proxy's question goes
// to the host that made the call, on that call's stream, and each host's
// answer decides its own call.
func TestConfirmationAsksTheCallingHost(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	url := serveProxy(t, p)
	var wg sync.WaitGroup
	asked := make([]atomic.Int64, 3)
	results := make([]string, 3)
	for i := range 3 {
		invoice := fmt.Sprintf("INV-%d", i)
		c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "v1"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked[i].Add(1)
				if !strings.Contains(req.Params.Message, invoice) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny", "reason": "not my call: " + req.Params.Message}}, nil
				}
				decision := "approve_once"
				if i == 1 {
					decision = "deny"
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision, "reason": "host " + invoice}}, nil
			},
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatalf("host %d: Connect = %v", i, err)
		}
		defer cs.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pay_invoice", Arguments: map[string]any{"invoice": invoice}})
			if err != nil {
				results[i] = "error: " + err.Error()
				return
			}
			results[i] = resultText(res)
		}()
	}
	wg.Wait()
	for i := range 3 {
		if got := asked[i].Load(); got != 1 {
			t.Errorf("host %d was asked %d times; want 1", i, got)
		}
	}
	want := []string{"paid INV-0", "host INV-1", "paid INV-2"}
	for i, w := range want {
		if !strings.Contains(results[i], w) {
			t.Errorf("host %d got %q; want it to contain %q", i, results[i], w)
		}
	}
	if got := u.payments.Load(); got != 2 {
		t.Errorf("pay_invoice ran %d times; want 2", got)
	}
}
