package client

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultSeeds are tool results as servers send them, including the corners
// of encoding/json's string and number formats.
var resultSeeds = []string{
	`{"content":[{"type":"text","text":"wrote 7 amount 1"}],"structuredContent":{"amount":1,"id":"7","key":"k7"}}`,
	`{"content":[],"isError":true}`,
	`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b","_meta":{"z":1,"a":[true,false,null]}}]}`,
	`{"_meta":{"io.github.mcpledger/replayed":true,"n":1e-7},"content":[{"type":"text","text":""}],"structuredContent":[1,2.5,-0,1e21,123456789012345678901234]}`,
	`{"content":[{"type":"text","text":"<b>&amp;</b> \u2028\u2029 \u0000\u001f\b\f\n\r\t \" \\ é 😀"}],"structuredContent":"x"}`,
	`{"content":[{"type":"text","text":"bad ` + "\xff" + ` utf8"}],"structuredContent":{"\u003ck\u003e":{"":{}},"b":[],"a":{"c":0.000001,"d":100000000000000000000}}}`,
	`{"content":[{"type":"text","text":"t"}],"structuredContent":null,"requestState":"opaque","resultType":"complete"}`,
	`{"content":[{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}]}`,
	`{"content":[{"type":"text","text":"t","annotations":{"priority":1}}]}`,
	`{"content":null,"structuredContent":17}`,
	`{"content":[],"inputRequests":{}}`,
}

// FuzzEncodeResult holds the direct encoder to go-sdk's own bytes for every
// result a client can decode.
func FuzzEncodeResult(f *testing.F) {
	for _, s := range resultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res mcp.CallToolResult
		if res.UnmarshalJSON(data) != nil {
			return
		}
		want, wantErr := res.MarshalJSON()
		got, err := encodeResult(&res)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("encodeResult error %v, MarshalJSON error %v, for %s", err, wantErr, data)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("for %s\n got %s\nwant %s", data, got, want)
		}
	})
}

// TestEncodeResultDirectPath checks that the direct path is taken for the
// results it was written for, so that FuzzEncodeResult compares it and not
// only MarshalJSON with itself, and is left for the rest.
func TestEncodeResultDirectPath(t *testing.T) {
	if resultLayout < 0 {
		t.Fatal("CallToolResult does not have the layout the direct encoder expects")
	}
	for i, s := range resultSeeds {
		var res mcp.CallToolResult
		if err := res.UnmarshalJSON([]byte(s)); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		_, ok := appendResult(nil, &res)
		wantOK := i < 7 || i == 9 // image content, annotations and inputRequests go to MarshalJSON
		if ok != wantOK {
			t.Errorf("seed %d %s: direct path %v, want %v", i, s, ok, wantOK)
		}
	}
	// Values a client never decodes, set by hand, also leave the direct path.
	for _, v := range []any{float32(1), map[string]int{"a": 1}, struct{ A int }{1}, []any{json.Number("1")}} {
		if _, ok := appendResult(nil, &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: v}); ok {
			t.Errorf("direct path taken for %T", v)
		}
	}
}

// TestMarshalArgsAsEncodingJSON holds the arguments written without
// encoding/json to the bytes json.Marshal writes, and its errors.
func TestMarshalArgsAsEncodingJSON(t *testing.T) {
	for i, args := range []map[string]any{
		{"amount": 1, "id": "7"},
		{"n": int64(-9007199254740993), "u": uint64(math.MaxUint64), "i32": int32(-5), "f": 2.5, "tiny": 1e-9, "big": 1e21, "z": 0.0},
		{"tags": []string{"a", "<b>"}, "none": []string(nil), "empty": []string{}, "labels": map[string]string{"z": "1", "a": "&"}},
		{"nested": map[string]any{"list": []any{true, nil, "x\u2028\u2029\x00\xff"}, "m": map[string]any(nil)}},
		{"": "", "é": "😀", "q\"uote": "line\nbreak\ttab"},
		{"when": time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}, // a json.Marshaler
		{"counts": map[string]int{"a": 1}},
		{"bad": math.NaN()},
		{"raw": json.RawMessage(`{"a" : 1}`)},
		{},
	} {
		got, err := marshalArgs(args)
		want, wantErr := json.Marshal(args)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("case %d: marshalArgs error %v, json.Marshal error %v", i, err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
	if got, err := marshalArgs(map[string]any(nil)); err != nil || string(got) != "{}" {
		t.Errorf("nil map: %s, %v", got, err)
	}
}

// FuzzMarshalArgs compares the arguments written without encoding/json
// with json.Marshal for every object JSON decodes to.
func FuzzMarshalArgs(f *testing.F) {
	for _, s := range []string{`{"amount":1,"id":"7"}`, `{"a":[1,"<",{"b":null}],"c":1e-7}`, `{"\u00e9":"\ud83d\ude00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]any
		if json.Unmarshal(data, &m) != nil || m == nil {
			return
		}
		got, err := marshalArgs(m)
		want, wantErr := json.Marshal(m)
		if err != nil || wantErr != nil {
			t.Fatalf("marshalArgs %v, json.Marshal %v", err, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("for %s\n got %s\nwant %s", data, got, want)
		}
	})
}
