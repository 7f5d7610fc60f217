//lint:file-ignore SA1019 the proxy relays logging and sampling between host and upstream; SEP-2577 deprecates them from protocol 2026-07-28, and hosts and servers on earlier versions still use them during the deprecation window

package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestResourcesPassThrough(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})
	ctx := context.Background()

	lr, err := h.cs.ListResources(ctx, nil)
	if err != nil || len(lr.Resources) != 1 || lr.Resources[0].URI != "note://1" {
		t.Fatalf("ListResources = %+v, %v; want note://1", lr, err)
	}
	lt, err := h.cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(lt.ResourceTemplates) != 1 || lt.ResourceTemplates[0].URITemplate != "note://{id}" {
		t.Fatalf("ListResourceTemplates = %+v, %v; want note://{id}", lt, err)
	}
	tests := []struct{ uri, want string }{
		{"note://1", "hello from note 1"},
		{"note://42", "note at note://42"},
	}
	for _, tc := range tests {
		t.Run(tc.uri, func(t *testing.T) {
			rr, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: tc.uri})
			if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != tc.want {
				t.Errorf("ReadResource(%q) = %+v, %v; want %q", tc.uri, rr, err, tc.want)
			}
		})
	}
	if _, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "other://x"}); err == nil {
		t.Errorf("ReadResource(other://x) = nil error; want the upstream's not-found error")
	}

	// Subscribe: the upstream hears of it, and its update reaches the host.
	if err := h.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "note://1"}); err != nil {
		t.Fatalf("Subscribe = %v", err)
	}
	if err := u.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "note://1"}); err != nil {
		t.Fatalf("ResourceUpdated = %v", err)
	}
	if got := h.waitEvent(t, "updated:"); got != "updated:note://1" {
		t.Errorf("host notification = %q; want updated:note://1", got)
	}
	if err := h.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "note://1"}); err != nil {
		t.Fatalf("Unsubscribe = %v", err)
	}
	u.mu.Lock()
	subs, unsubs := u.subs, u.unsubs
	u.mu.Unlock()
	if len(subs) != 1 || subs[0] != "note://1" || len(unsubs) != 1 || unsubs[0] != "note://1" {
		t.Errorf("upstream saw subscribe %v, unsubscribe %v; want note://1 each", subs, unsubs)
	}
}

func TestPromptsAndCompletionPassThrough(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})
	ctx := context.Background()

	lp, err := h.cs.ListPrompts(ctx, nil)
	if err != nil || len(lp.Prompts) != 1 || lp.Prompts[0].Name != "greet" {
		t.Fatalf("ListPrompts = %+v, %v; want greet", lp, err)
	}
	gp, err := h.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Ada" {
		t.Fatalf("GetPrompt = %+v, %v; want Hello, Ada", gp, err)
	}
	cr, err := h.cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: "Ad"},
	})
	if err != nil || strings.Join(cr.Completion.Values, ",") != "Ad-one,Ad-two" {
		t.Fatalf("Complete = %+v, %v; want Ad-one,Ad-two", cr, err)
	}

	// A prompt added upstream: the host hears of it and sees it.
	u.srv.AddPrompt(&mcp.Prompt{Name: "farewell"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	h.waitEvent(t, "prompts_changed")
	lp, err = h.cs.ListPrompts(ctx, nil)
	if err != nil || len(lp.Prompts) != 2 {
		t.Errorf("ListPrompts after a change = %+v, %v; want 2 prompts", lp, err)
	}
}

func TestToolListChangeIsRelayed(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})
	ctx := context.Background()
	// The host's session binds the upstream session that hears the change.
	h.call(t, "add_note", map[string]any{"text": "x"}, nil)

	mcp.AddTool(u.srv, &mcp.Tool{Name: "archive_note"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text("archived"), nil, nil
	})
	u.srv.RemoveTools("chatty")
	// Notifications are coalesced; poll the list until it shows the change.
	for {
		h.waitEvent(t, "tools_changed")
		var names []string
		for tool, err := range h.cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("Tools = %v", err)
			}
			names = append(names, tool.Name)
		}
		joined := "," + strings.Join(names, ",") + ","
		if strings.Contains(joined, ",archive_note,") && !strings.Contains(joined, ",chatty,") {
			break
		}
	}
	if res := h.call(t, "archive_note", nil, nil); resultText(res) != "archived" {
		t.Errorf("archive_note = %q; want archived", resultText(res))
	}
}

func TestServerInitiatedRequestsReachTheHost(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{
		sampling: true,
		elicit: func(req *mcp.ElicitRequest) *mcp.ElicitResult {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "teal"}}
		},
	})
	if got := resultText(h.call(t, "ask_model", nil, nil)); got != "model said: hi from the host" {
		t.Errorf("ask_model = %q; want the host's sampling answer", got)
	}
	if got := resultText(h.call(t, "ask_user", nil, nil)); got != "user said: accept teal" {
		t.Errorf("ask_user = %q; want the host's elicitation answer", got)
	}
	if msg := <-h.messages; msg != "favourite colour?" {
		t.Errorf("host saw elicitation %q; want the upstream's unchanged", msg)
	}
}

func TestServerInitiatedRequestsWithoutHostSupport(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})
	tests := []struct{ tool, want string }{
		{"ask_model", "does not support sampling"},
		{"ask_user", "does not support elicitation"},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			res := h.call(t, tc.tool, nil, nil)
			if !res.IsError || !strings.Contains(resultText(res), tc.want) {
				t.Errorf("%s = %q (isError %v); want an error containing %q", tc.tool, resultText(res), res.IsError, tc.want)
			}
		})
	}
}

func TestLoggingAndProgressPassThrough(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})
	ctx := context.Background()
	if err := h.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatalf("SetLoggingLevel = %v", err)
	}
	res := h.call(t, "chatty", map[string]any{}, mcp.Meta{"progressToken": "tok-1"})
	if resultText(res) != "done" {
		t.Fatalf("chatty = %q; want done", resultText(res))
	}
	// In the order the upstream sent them; the debug line is below the
	// level the host set, so the upstream never sends it.
	if got := h.waitEvent(t, "log:"); got != "log:info:working" {
		t.Errorf("log notification = %q; want log:info:working", got)
	}
	if got := h.waitEvent(t, "progress:"); got != "progress:tok-1:1/2" {
		t.Errorf("progress notification = %q; want progress:tok-1:1/2", got)
	}
	select {
	case e := <-h.events:
		t.Errorf("unexpected notification %q after the call", e)
	default:
	}
}

// Over streamable HTTP each host session gets its own upstream session, so
// the upstream's questions reach the host whose call asked them. (The
// hosts share the proxy's ledger session: the same call from both would be
// one operation, so each asks with its own arguments.)
func TestHTTPHostsEachGetTheirOwnUpstream(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.Server() }, nil))
	t.Cleanup(srv.Close)

	colours := []string{"red", "blue"}
	hosts := make([]*mcp.ClientSession, len(colours))
	for i, colour := range colours {
		opts := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": colour}}, nil
		}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host-" + colour, Version: "v1"}, opts).
			Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
		if err != nil {
			t.Fatalf("host %d Connect = %v", i, err)
		}
		t.Cleanup(func() { cs.Close() })
		hosts[i] = cs
	}
	for i, cs := range hosts {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"host": i}})
		if err != nil {
			t.Fatalf("host %d ask_user = %v", i, err)
		}
		if got, want := resultText(res), "user said: accept "+colours[i]; got != want {
			t.Errorf("host %d ask_user = %q; want %q", i, got, want)
		}
	}
	if n := u.sessions.Load(); n != 2 {
		t.Errorf("upstream sessions = %d; want 2, one per host session", n)
	}
}

// TestResourcesAndPromptsAfterUpstreamDies: when the upstream session is
// gone, the host's next resource or prompt request opens a new one; it
// does not wait for a tool call to bring the upstream back.
func TestResourcesAndPromptsAfterUpstreamDies(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})
	ctx := context.Background()
	if _, err := h.cs.ListResources(ctx, nil); err != nil {
		t.Fatalf("ListResources = %v", err)
	}
	before := u.sessions.Load()
	u.killSessions()
	rr, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "note://1"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello from note 1" {
		t.Fatalf("ReadResource after the upstream died = %+v, %v; want the note from a new session", rr, err)
	}
	u.killSessions()
	gp, err := h.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ann"}})
	if err != nil || len(gp.Messages) != 1 {
		t.Fatalf("GetPrompt after the upstream died = %+v, %v", gp, err)
	}
	if got := u.sessions.Load() - before; got != 2 {
		t.Errorf("upstream sessions opened after the deaths = %d; want 2 (one per death)", got)
	}
	// Tool calls use the new session too.
	if res := h.call(t, "add_note", map[string]any{"text": "after"}, nil); res.IsError {
		t.Errorf("add_note after reconnecting = %q", resultText(res))
	}
	if got := u.sessions.Load() - before; got != 2 {
		t.Errorf("upstream sessions after the tool call = %d; want still 2", got)
	}
}

// TestNewUpstreamSessionKeepsSubscriptionsAndLevel: a session that
// replaces a dead upstream session is given the host's resource
// subscriptions and log level again, so updates and log lines keep coming.
func TestNewUpstreamSessionKeepsSubscriptionsAndLevel(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})
	ctx := context.Background()
	if err := h.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatalf("SetLoggingLevel = %v", err)
	}
	for _, uri := range []string{"note://1", "note://2"} {
		if err := h.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("Subscribe(%s) = %v", uri, err)
		}
		<-u.subscribed
	}
	if err := h.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "note://2"}); err != nil {
		t.Fatalf("Unsubscribe = %v", err)
	}
	u.killSessions()
	if _, err := h.cs.ListResources(ctx, nil); err != nil { // reconnects
		t.Fatalf("ListResources after the upstream died = %v", err)
	}
	select {
	case uri := <-u.subscribed:
		if uri != "note://1" {
			t.Fatalf("new upstream session subscribed to %s; want note://1 only", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the new upstream session was not subscribed to note://1")
	}
	if err := u.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "note://1"}); err != nil {
		t.Fatalf("ResourceUpdated = %v", err)
	}
	if got := h.waitEvent(t, "updated:"); got != "updated:note://1" {
		t.Errorf("host notification = %q; want updated:note://1", got)
	}
	// The level was set before the subscriptions: the info line comes, the
	// debug line does not.
	res := h.call(t, "chatty", map[string]any{}, nil)
	if resultText(res) != "done" {
		t.Fatalf("chatty = %q", resultText(res))
	}
	if got := h.waitEvent(t, "log:"); got != "log:info:working" {
		t.Errorf("log notification = %q; want log:info:working", got)
	}
	select {
	case uri := <-u.subscribed:
		t.Errorf("unexpected subscription to %s", uri)
	default:
	}
}
