package main

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool whose annotations --json shows is never "-" under ANNOTATIONS,
// even when every hint it declares is a default.
func TestToolAnnotationsShown(t *testing.T) {
	for _, tc := range []struct{ tool, want string }{
		{`{"name":"a"}`, "-"},
		{`{"name":"a","annotations":{"title":"Look up","readOnlyHint":false,"idempotentHint":false}}`, "not read-only,not idempotent"},
		{`{"name":"a","annotations":{"readOnlyHint":true}}`, "read-only"},
		{`{"name":"a","annotations":{"destructiveHint":false,"idempotentHint":true}}`, "non-destructive,idempotent"},
	} {
		var tool mcp.Tool
		if err := json.Unmarshal([]byte(tc.tool), &tool); err != nil {
			t.Fatal(err)
		}
		if got := annotationText(tool.Annotations); got != tc.want {
			t.Errorf("annotationText(%s) = %q; want %q", tc.tool, got, tc.want)
		}
	}
}
