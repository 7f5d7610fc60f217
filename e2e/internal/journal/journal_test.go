package journal

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    int
		wantErr bool
	}{
		{"missing file", "", 0, false},
		{"two lines", `{"event":"issue","key":"a"}` + "\n" + `{"event":"answer","key":"a"}` + "\n", 2, false},
		{"torn last line", `{"event":"issue","key":"a"}` + "\n" + `{"event":"ans`, 1, false},
		{"garbage in the middle", `{"event":"issue","key":"a"}` + "\n" + "garbage\n" + `{"event":"issue","key":"b"}` + "\n", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.jsonl")
			if tc.data != "" {
				if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Read(path)
			if (err != nil) != tc.wantErr || len(got) != tc.want {
				t.Fatalf("Read(%q) = %d entries, %v; want %d entries, error %v", tc.data, len(got), err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		want Entry
	}{
		{"payment", &mcp.CallToolResult{Content: text("paid"), StructuredContent: map[string]any{"payment_id": "pay_1"}},
			Entry{Outcome: OutcomeSucceeded, PaymentID: "pay_1", Text: "paid"}},
		{"tool error", &mcp.CallToolResult{IsError: true, Content: text("limit")},
			Entry{Outcome: OutcomeToolError, Text: "limit"}},
		{"proxy's unknown outcome", &mcp.CallToolResult{IsError: true, Content: text("unknown"),
			Meta: mcp.Meta{MetaError: map[string]any{"key": "k", "state": "UNKNOWN"}}},
			Entry{Outcome: OutcomeToolError, UpstreamState: "UNKNOWN", Text: "unknown"}},
		{"reconciled", &mcp.CallToolResult{Content: text("ok"), Meta: mcp.Meta{metaReconciled: map[string]any{"as": "SUCCEEDED"}}},
			Entry{Outcome: OutcomeSucceeded, Reconciled: true, Text: "ok"}},
		{"no result", nil, Entry{Outcome: OutcomeError, Error: "no result"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Entry
			Describe(tc.res, &got)
			if got != tc.want {
				t.Errorf("Describe(%s) = %+v; want %+v", tc.name, got, tc.want)
			}
		})
	}
}
