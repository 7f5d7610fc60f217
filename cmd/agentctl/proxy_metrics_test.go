package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/mcptest"
)

var metricsLine = regexp.MustCompile(`metrics on (http://\S+)`)

// TestProxyMetrics runs agentctl proxy --metrics-addr as a child process,
// makes a call and its repeat through it, and scrapes the endpoint over
// HTTP on 127.0.0.1.
func TestProxyMetrics(t *testing.T) {
	s := mcptest.New(&mcptest.Options{})
	t.Cleanup(func() { s.Close() })
	cmd := proxyCommand(t, proxyEnv(t), "proxy", "--listen", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
		"--url", mcptest.ServeHTTP(t, s))
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting agentctl proxy: %v", err)
	}
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("SIGTERM: %v", err)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("agentctl proxy after SIGTERM: %v; want exit 0", err)
		}
		pw.Close()
	})
	var log proxyLog
	endpoints, metrics := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			log.Write([]byte(sc.Text() + "\n"))
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				endpoints <- m[1]
			}
			if m := metricsLine.FindStringSubmatch(sc.Text()); m != nil {
				metrics <- m[1]
			}
		}
	}()
	var endpoint, metricsURL string
	for endpoint == "" || metricsURL == "" {
		select {
		case endpoint = <-endpoints:
		case metricsURL = <-metrics:
		case <-time.After(2 * time.Minute):
			t.Fatalf("agentctl proxy printed no listening and metrics lines; stderr:\n%s", log.String())
		}
	}
	if !strings.HasPrefix(metricsURL, "http://127.0.0.1:") || !strings.HasSuffix(metricsURL, "/metrics") {
		t.Fatalf("metrics URL = %q; want http://127.0.0.1:PORT/metrics", metricsURL)
	}

	cs, _ := dialProxyHost(t, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	args := map[string]any{"id": "order-1", "amount": 10}
	for i := range 2 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("write #%d = %v, %v; want a result", i+1, res, err)
		}
	}

	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatalf("GET %s = %v", metricsURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", metricsURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %s", metricsURL, resp.Status)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^mcpledger_calls_total\{gen_ai_tool_name="write",mcpledger_outcome="succeeded",mcpledger_side="client"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^mcpledger_calls_total\{gen_ai_tool_name="write",mcpledger_outcome="replayed",mcpledger_side="client"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^mcpledger_duplicate_hits_total\{gen_ai_tool_name="write",mcpledger_side="client",mcpledger_state="SUCCEEDED"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^mcpledger_replay_duration_seconds_count\{gen_ai_tool_name="write",mcpledger_side="client"[^}]*\} 1$`),
		// The gauges of open records, read from the proxy's ledger through
		// agentctl's store wrapper.
		regexp.MustCompile(`(?m)^mcpledger_records_unknown_open\{mcpledger_side="client"[^}]*\} 0$`),
		regexp.MustCompile(`(?m)^mcpledger_records_unknown_oldest_age_seconds\{mcpledger_side="client"[^}]*\} 0$`),
		regexp.MustCompile(`(?m)^mcpledger_records_pending_approval_open\{mcpledger_side="client"[^}]*\} 0$`),
		regexp.MustCompile(`(?m)^mcp_client_operation_duration_seconds_count\{gen_ai_operation_name="execute_tool",gen_ai_tool_name="write",mcp_method_name="tools/call",[^}]*mcpledger_outcome="succeeded"[^}]*\} 1$`),
	} {
		if !want.Match(body) {
			t.Errorf("scrape lacks a line matching %s\n--- scrape:\n%s", want, body)
		}
	}
}

func TestProxyMetricsAddrMustBeLoopback(t *testing.T) {
	s := mcptest.New(&mcptest.Options{})
	t.Cleanup(func() { s.Close() })
	_, env := ledgerEnv(t)
	for _, addr := range []string{"0.0.0.0:9464", "example.com:9464", "no-port"} {
		o := inProcess(t, env, nil, "proxy", "--metrics-addr", addr, "--url", mcptest.ServeHTTP(t, s))
		o.wantExit(t, exitUsage, "--metrics-addr")
	}
}
