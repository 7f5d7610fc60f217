package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP host runs agentctl serve and asks it about its session's calls; it
// never sees another session's.
func TestServe(t *testing.T) {
	e := newE2E(t)
	e.call(nil, append([]string{"--yes", "--session", "agent-1", "--key", "mine"}, pay...)...).wantExit(t, exitOK)
	e.call(nil, append([]string{"--yes", "--session", "agent-2", "--key", "theirs"}, pay...)...).wantExit(t, exitOK)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(e.agentctl, "serve", "--session", "agent-1")
	cmd.Env = e.env
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "test"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to agentctl serve: %v", err)
	}
	defer cs.Close()

	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"ledger_list", "ledger_status"}; !slices.Equal(names, want) {
		t.Errorf("agentctl serve tools = %v; want %v", names, want)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ledger_list", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("ledger_list = %+v, %v", res, err)
	}
	var list struct {
		Calls []struct{ Key, State string } `json:"calls"`
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("ledger_list structured content %s: %v", b, err)
	}
	if len(list.Calls) != 1 || list.Calls[0].Key != "mine" || list.Calls[0].State != "SUCCEEDED" {
		t.Errorf("ledger_list in session agent-1 = %s; want only the SUCCEEDED call \"mine\"", b)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ledger_status", Arguments: map[string]any{"key": "theirs"}})
	if err != nil {
		t.Fatalf("ledger_status: %v", err)
	}
	var status struct {
		Found *bool `json:"found"`
	}
	if b, err = json.Marshal(res.StructuredContent); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &status); err != nil || status.Found == nil || *status.Found {
		t.Errorf("ledger_status of another session's key = %s; want found: false", b)
	}
}
