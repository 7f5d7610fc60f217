package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// The proxy fed raw bytes, as a broken or hostile host sends them: every
// malformed message gets a JSON-RPC error, and the next ping is answered.

// rpcAnswer is one JSON-RPC response as a test reads it.
type rpcAnswer struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// malformedCases are the messages a host may get wrong, and the error each
// must get back (wantID nil: the id is null).
var malformedCases = []struct {
	name     string
	line     string
	wantID   any
	wantCode int64
	stdio    bool     // over stdio only (HTTP has no lines)
	mention  []string // words the error's message must hold
}{
	{name: "not JSON", line: `this is not json`, wantCode: -32700},
	{name: "half an object", line: `{"jsonrpc":"2.0","id":3,`, wantCode: -32700},
	{name: "two values on a line", line: `{"jsonrpc":"2.0","id":4,"method":"ping"} {}`, wantCode: -32700, stdio: true},
	{name: "batch", line: `[{"jsonrpc":"2.0","id":"b1","method":"ping"}]`, wantCode: -32600},
	{name: "empty batch", line: `[]`, wantCode: -32600},
	{name: "no method", line: `{"jsonrpc":"2.0","id":5}`, wantID: float64(5), wantCode: -32600},
	{name: "a number", line: `123`, wantCode: -32600},
	{name: "no version tag", line: `{"id":7,"method":"ping"}`, wantID: float64(7), wantCode: -32600},
	{name: "unknown method", line: `{"jsonrpc":"2.0","id":8,"method":"no/such/method"}`, wantID: float64(8), wantCode: -32601},
	{name: "arguments a string", line: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"create_payment","arguments":"pay acme"}}`, wantID: float64(9), wantCode: -32602},
	{name: "arguments an array", line: `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"create_payment","arguments":[1250,"acme"]}}`, wantID: float64(10), wantCode: -32602},
	{name: "key a number", line: callWithKey(11, `123`), wantID: float64(11), wantCode: -32602},
	{name: "key null", line: callWithKey(12, `null`), wantID: float64(12), wantCode: -32602},
	{name: "key an object", line: callWithKey(13, `{}`), wantID: float64(13), wantCode: -32602},
	{name: "key empty", line: callWithKey(14, `""`), wantID: float64(14), wantCode: -31004},
	{name: "key with a space", line: callWithKey(15, `"pay acme"`), wantID: float64(15), wantCode: -31004},
	{name: "a name twice in the arguments", line: callWithArgs(16, `{"amount_cents":1,"currency":"EUR","payee":"x","amount_cents":5000}`, ""), wantID: float64(16), wantCode: -32602, mention: []string{`"amount_cents"`}},
	{name: "a name twice in the arguments of a keyed call", line: callWithArgs(17, `{"amount_cents":1,"currency":"EUR","payee":"x","amount_cents":5000}`, "dup-names"), wantID: float64(17), wantCode: -32602, mention: []string{`"amount_cents"`}},
	{name: "the key twice in the arguments", line: callWithArgs(18, `{"amount_cents":1,"currency":"EUR","payee":"x","idempotency_key":"k-1","idempotency_key":"k-2"}`, "k-1"), wantID: float64(18), wantCode: -32602, mention: []string{`"idempotency_key"`}},
	{name: "one key in _meta, another in the arguments", line: callWithArgs(19, `{"amount_cents":1,"currency":"EUR","payee":"x","idempotency_key":"arg-key-1"}`, "meta-key-1"), wantID: float64(19), wantCode: -32602, mention: []string{"meta-key-1", "arg-key-1"}},
}

// callWithArgs is a create_payment call with raw arguments and, unless
// key is empty, a key in _meta.
func callWithArgs(id int, args, key string) string {
	meta := ""
	if key != "" {
		meta = fmt.Sprintf(`,"_meta":{"io.github.mcpledger/idempotency-key":%q}`, key)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"create_payment","arguments":%s%s}}`, id, args, meta)
}

// missing reports the words of want that msg lacks.
func missing(msg string, want []string) []string {
	var out []string
	for _, w := range want {
		if !strings.Contains(msg, w) {
			out = append(out, w)
		}
	}
	return out
}

func callWithKey(id int, key string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"create_payment","arguments":{"amount_cents":1250,"currency":"EUR","payee":"acme"},"_meta":{"io.github.mcpledger/idempotency-key":%s}}}`, id, key)
}

const rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw-host","version":"1"}}}`

func TestProxyStdioMalformedInput(t *testing.T) {
	_, payments := binaries(t)
	db := t.TempDir() + "/pay.db"
	env := proxyEnv(t)
	cmd := proxyCommand(t, env, "proxy", "--", payments, "-db", db)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &proxyLog{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting agentctl proxy: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close()
		if err := <-exited; err != nil {
			t.Errorf("agentctl proxy after stdin closed: %v; want exit 0\nstderr:\n%s", err, stderr.String())
		}
	})
	answers := make(chan rpcAnswer, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var a rpcAnswer
			if json.Unmarshal(sc.Bytes(), &a) == nil && a.ID != nil || a.Error != nil {
				answers <- a
			}
		}
		close(answers)
	}()
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("writing %q to the proxy: %v\nstderr:\n%s", line, err, stderr.String())
		}
	}
	next := func() rpcAnswer {
		t.Helper()
		select {
		case a, ok := <-answers:
			if !ok {
				t.Fatalf("the proxy closed stdout; stderr:\n%s", stderr.String())
			}
			return a
		case <-time.After(time.Minute):
			t.Fatalf("no answer from the proxy in a minute; stderr:\n%s", stderr.String())
			return rpcAnswer{}
		}
	}

	send(rawInitialize)
	if a := next(); a.Error != nil || a.ID != float64(1) {
		t.Fatalf("initialize = %+v; want a result for id 1", a)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, tc := range malformedCases {
		send(tc.line)
		a := next()
		if a.Error == nil || a.Error.Code != tc.wantCode || a.ID != tc.wantID {
			t.Errorf("%s: answer = %+v (result %s); want error %d with id %v", tc.name, a, a.Result, tc.wantCode, tc.wantID)
		} else if !strings.Contains(a.Error.Message, ";") && tc.wantCode != -32601 {
			t.Errorf("%s: message %q names no fix", tc.name, a.Error.Message)
		} else if m := missing(a.Error.Message, tc.mention); len(m) > 0 {
			t.Errorf("%s: message %q does not name %q", tc.name, a.Error.Message, m)
		}
		ping := fmt.Sprintf("ping-%d", i)
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"ping"}`, ping))
		if a := next(); a.ID != ping || a.Error != nil {
			t.Fatalf("after %s: ping = %+v; want its result", tc.name, a)
		}
	}
	if got := paymentsIn(t, db); got != 0 {
		t.Errorf("payments made = %d; want 0", got)
	}
	wantNoRecords(t, env)
}

func TestProxyHTTPMalformedInput(t *testing.T) {
	_, payments := binaries(t)
	db := t.TempDir() + "/pay.db"
	env := proxyEnv(t)
	endpoint := listeningProxy(t, env, "--", payments, "-db", db)

	post := func(session, body string) (int, string, rpcAnswer) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", body, err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var a rpcAnswer
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			for line := range strings.Lines(string(data)) {
				if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok && strings.TrimSpace(d) != "" {
					data = []byte(d)
				}
			}
		}
		if len(bytes.TrimSpace(data)) > 0 {
			if err := json.Unmarshal(data, &a); err != nil {
				t.Errorf("POST %s: body %q (status %d, %s) is not a JSON-RPC response: %v", body, data, resp.StatusCode, resp.Header.Get("Content-Type"), err)
			}
		}
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), a
	}

	status, session, a := post("", rawInitialize)
	if status != http.StatusOK || session == "" || a.Error != nil {
		t.Fatalf("initialize = %d, session %q, %+v; want 200 with a session", status, session, a)
	}
	if status, _, _ := post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized = %d; want 202", status)
	}
	for i, tc := range malformedCases {
		if tc.stdio {
			continue
		}
		status, _, a := post(session, tc.line)
		if a.Error == nil || a.Error.Code != tc.wantCode || a.ID != tc.wantID {
			t.Errorf("%s: status %d, answer %+v (result %s); want error %d with id %v", tc.name, status, a, a.Result, tc.wantCode, tc.wantID)
		} else if m := missing(a.Error.Message, tc.mention); len(m) > 0 {
			t.Errorf("%s: message %q does not name %q", tc.name, a.Error.Message, m)
		}
		if status == http.StatusAccepted {
			t.Errorf("%s: status 202; a malformed message is not accepted", tc.name)
		}
		ping := fmt.Sprintf("ping-%d", i)
		if status, _, a := post(session, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"ping"}`, ping)); status != http.StatusOK || a.ID != ping || a.Error != nil {
			t.Fatalf("after %s: ping = %d %+v; want its result", tc.name, status, a)
		}
	}
	if got := paymentsIn(t, db); got != 0 {
		t.Errorf("payments made = %d; want 0", got)
	}
	wantNoRecords(t, env)
}

// wantNoRecords fails if the ledger of a proxy run with env holds records.
func wantNoRecords(t *testing.T, env []string) {
	t.Helper()
	var path string
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "MCPLEDGER_LEDGER="); ok {
			path = p
		}
	}
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("sqlite.Open(%q) = %v", path, err)
	}
	defer st.Close()
	page, err := st.List(context.Background(), ledger.Filter{Tenant: "default", Layer: ledger.LayerProxy})
	if err != nil {
		t.Fatalf("List = %v", err)
	}
	for _, r := range page.Records {
		t.Errorf("record %s/%s in %s; a malformed call must leave none", r.Tool, r.Key, r.State)
	}
}
