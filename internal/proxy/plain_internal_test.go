package proxy

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// plainRequest may only vouch for what the SDK's own reader takes as the
// same request; everything else it leaves to that reader.
func TestPlainRequest(t *testing.T) {
	deep := `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`
	tests := []struct {
		name  string
		data  string
		plain bool
	}{
		{"call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`, true},
		{"string id", `{"jsonrpc":"2.0","id":"a","method":"ping"}`, true},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, true},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, true},
		{"keys in capitals", `{"JSONRPC":"2.0","id":1,"METHOD":"ping"}`, false},
		{"no version tag", `{"id":1,"method":"ping"}`, false},
		{"version 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, false},
		{"method a number", `{"jsonrpc":"2.0","id":1,"method":5}`, false},
		{"id an object", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, false},
		{"id too large a number", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, false},
		{"a response", `{"jsonrpc":"2.0","id":1,"result":{}}`, false},
		{"error beside method", `{"jsonrpc":"2.0","id":1,"method":"ping","error":5}`, false},
		{"nested past the SDK's limit", deep, false},
		{"an array", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, false},
		{"bracket inside a string", `{"jsonrpc":"2.0","id":"[[{","method":"ping"}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, ok := plainRequest([]byte(tc.data))
			if ok != tc.plain {
				t.Fatalf("plainRequest(%s) = %v; want %v", tc.data, ok, tc.plain)
			}
			if ok {
				agreeWithSDK(t, []byte(tc.data), req)
			}
		})
	}
}

// agreeWithSDK fails unless the SDK's reader decodes data as a request with
// req's id and method.
func agreeWithSDK(t *testing.T, data []byte, req *jsonrpc.Request) {
	t.Helper()
	m, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		t.Fatalf("plainRequest vouched for %q, which the SDK refuses: %v", data, err)
	}
	sr, isReq := m.(*jsonrpc.Request)
	if !isReq || sr.ID != req.ID || sr.Method != req.Method {
		t.Fatalf("plainRequest(%q) = id %v method %q; the SDK reads %#v", data, req.ID.Raw(), req.Method, m)
	}
}

func FuzzPlainRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","method":"ping"}`,
		`{"Jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-0.5,"method":"ping","params":[[["\"]"]]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if req, ok := plainRequest(data); ok {
			agreeWithSDK(t, data, req)
		}
	})
}
