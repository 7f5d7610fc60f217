package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// scriptedAPI is the Messages API on loopback: each POST /v1/messages is
// answered with the next turn of a script, so the real tool runner and
// MCP helper run against it as against the real API. It keeps every
// request, so a test reads what the model was shown.
type scriptedAPI struct {
	URL string

	mu       sync.Mutex // guards turns and requests
	turns    []turn
	requests []apiRequest
	errs     []string
}

// turn is the model's next message, given the request it answers.
type turn func(req apiRequest) reply

// reply is one assistant message: a tool call, or the last answer.
type reply struct {
	tool  string
	input map[string]any
	text  string
}

// callTool is a turn that calls tool with input, whatever the request.
func callTool(tool string, input map[string]any) turn {
	return func(apiRequest) reply { return reply{tool: tool, input: input} }
}

// finish is a turn that ends the conversation with text.
func finish(text string) turn {
	return func(apiRequest) reply { return reply{text: text} }
}

// apiRequest is what the runner sent: the parts a test reads.
type apiRequest struct {
	Model    string       `json:"model"`
	Messages []apiMessage `json:"messages"`
	Tools    []apiTool    `json:"tools"`
}

type apiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type apiTool struct {
	Name        string         `json:"name"`
	InputSchema map[string]any `json:"input_schema"`
}

// toolResult is one tool_result block the runner sent back.
type toolResult struct {
	ToolUseID string
	IsError   bool
	Text      string
}

// results are the tool results of the request's last message.
func (r apiRequest) results() []toolResult {
	if len(r.Messages) == 0 {
		return nil
	}
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	if json.Unmarshal(r.Messages[len(r.Messages)-1].Content, &blocks) != nil {
		return nil
	}
	var out []toolResult
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		res := toolResult{ToolUseID: b.ToolUseID, IsError: b.IsError}
		var s string
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		switch {
		case json.Unmarshal(b.Content, &s) == nil:
			res.Text = s
		case json.Unmarshal(b.Content, &parts) == nil:
			var texts []string
			for _, p := range parts {
				texts = append(texts, p.Text)
			}
			res.Text = strings.Join(texts, "\n")
		}
		out = append(out, res)
	}
	return out
}

// newScriptedAPI serves turns, in order, until t ends.
func newScriptedAPI(t *testing.T, turns ...turn) *scriptedAPI {
	t.Helper()
	api := &scriptedAPI{turns: turns}
	srv := httptest.NewServer(http.HandlerFunc(api.serve))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		api.mu.Lock()
		defer api.mu.Unlock()
		for _, e := range api.errs {
			t.Error(e)
		}
	})
	api.URL = srv.URL
	return api
}

func (api *scriptedAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		api.fail(w, fmt.Sprintf("scripted API: unexpected %s %s", r.Method, r.URL.Path))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		api.fail(w, "scripted API: reading the request: "+err.Error())
		return
	}
	var req apiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		api.fail(w, "scripted API: decoding the request: "+err.Error())
		return
	}
	api.mu.Lock()
	n := len(api.requests)
	api.requests = append(api.requests, req)
	var next turn
	if n < len(api.turns) {
		next = api.turns[n]
	}
	api.mu.Unlock()
	if next == nil {
		api.fail(w, fmt.Sprintf("scripted API: request %d is past the script's %d turns", n+1, len(api.turns)))
		return
	}
	rep := next(req)
	msg := map[string]any{
		"id": fmt.Sprintf("msg_%d", n+1), "type": "message", "role": "assistant", "model": req.Model,
		"stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 10},
	}
	if rep.tool != "" {
		msg["content"] = []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", n+1), "name": rep.tool, "input": rep.input}}
		msg["stop_reason"] = "tool_use"
	} else {
		msg["content"] = []any{map[string]any{"type": "text", "text": rep.text}}
		msg["stop_reason"] = "end_turn"
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(msg); err != nil {
		api.record("scripted API: writing the answer: " + err.Error())
	}
}

// fail answers a request the script cannot and makes the test fail.
func (api *scriptedAPI) fail(w http.ResponseWriter, msg string) {
	api.record(msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, msg)
}

func (api *scriptedAPI) record(msg string) {
	api.mu.Lock()
	api.errs = append(api.errs, msg)
	api.mu.Unlock()
}

// seen is every request so far.
func (api *scriptedAPI) seen() []apiRequest {
	api.mu.Lock()
	defer api.mu.Unlock()
	return append([]apiRequest(nil), api.requests...)
}

// shown is the one tool result the model was shown in request i (0-based).
func (api *scriptedAPI) shown(t *testing.T, i int) toolResult {
	t.Helper()
	reqs := api.seen()
	if i >= len(reqs) {
		t.Fatalf("the runner sent %d requests; want at least %d", len(reqs), i+1)
	}
	res := reqs[i].results()
	if len(res) != 1 {
		t.Fatalf("request %d carries %d tool results; want 1", i+1, len(res))
	}
	t.Logf("request %d shows the model (isError %v): %s", i+1, res[0].IsError, res[0].Text)
	return res[0]
}
