package compact_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/compact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigText is a text content item of about n bytes.
func bigText(n int) string {
	return `{"type":"text","text":"` + strings.Repeat("x", n) + `"}`
}

type compacted struct {
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		URI      string          `json:"uri"`
		Name     string          `json:"name"`
		Resource json.RawMessage `json:"resource"`
	} `json:"content"`
	IsError           bool                       `json:"isError"`
	Meta              map[string]json.RawMessage `json:"_meta"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	Extra             json.RawMessage            `json:"resultType"`
}

func decodeCompacted(t *testing.T, raw json.RawMessage) compacted {
	t.Helper()
	var c compacted
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("compacted result %.200s is not JSON: %v", raw, err)
	}
	return c
}

func TestCompactUnderLimitUnchanged(t *testing.T) {
	in := json.RawMessage(`{"content":[{"type":"text","text":"ok"}], "isError":false}`)
	for _, limit := range []int{len(in), len(in) + 1, 0} {
		got, changed, err := compact.Result(in, limit)
		if err != nil || changed || string(got) != string(in) {
			t.Fatalf("Compact(%s, %d) = %s, %v, %v; want it unchanged", in, limit, got, changed, err)
		}
	}
}

func TestCompact(t *testing.T) {
	const limit = 8 << 10
	cases := []struct {
		name   string
		in     string
		check  func(t *testing.T, c compacted)
		inNote []string // fragments the note must hold
	}{
		{
			name: "text dropped, link and structured content kept",
			in: `{"content":[` + bigText(20000) + `,{"type":"resource_link","uri":"orders://42","name":"order 42","mimeType":"application/json"}],` +
				`"structuredContent":{"orderId":42,"status":"created"},"isError":false}`,
			check: func(t *testing.T, c compacted) {
				if len(c.Content) != 2 || c.Content[1].Type != "resource_link" || c.Content[1].URI != "orders://42" || c.Content[1].Name != "order 42" {
					t.Errorf("content = %+v; want the note and the resource link", c.Content)
				}
				if string(c.StructuredContent) != `{"orderId":42,"status":"created"}` {
					t.Errorf("structuredContent = %s; want it kept", c.StructuredContent)
				}
			},
			inNote: []string{"bytes", "compacted", "Kept: isError, 1 resource link, structuredContent", "Dropped: 1 text item"},
		},
		{
			name: "embedded resource reduced to uri and mimeType",
			in: `{"content":[{"type":"resource","resource":{"uri":"file:///report.csv","mimeType":"text/csv","text":"` +
				strings.Repeat("a,b\\n", 5000) + `"}},{"type":"resource","resource":{"uri":"file:///img.png","blob":"` + strings.Repeat("QUJD", 3000) + `"}}]}`,
			check: func(t *testing.T, c compacted) {
				if len(c.Content) != 3 {
					t.Fatalf("content = %+v; want the note and two resource references", c.Content)
				}
				if got := string(c.Content[1].Resource); got != `{"uri":"file:///report.csv","mimeType":"text/csv"}` {
					t.Errorf("content[1].resource = %s; want uri and mimeType only", got)
				}
				if got := string(c.Content[2].Resource); got != `{"uri":"file:///img.png"}` {
					t.Errorf("content[2].resource = %s; want uri only", got)
				}
			},
			inNote: []string{"2 embedded resources (uri and mimeType only)"},
		},
		{
			name: "structured content too large is dropped and named",
			in:   `{"content":[{"type":"text","text":"created order 42"}],"structuredContent":{"rows":"` + strings.Repeat("r", 20000) + `"}}`,
			check: func(t *testing.T, c compacted) {
				if c.StructuredContent != nil {
					t.Errorf("structuredContent = %.80s…; want it dropped", c.StructuredContent)
				}
				if len(c.Content) != 2 || c.Content[1].Text != "created order 42" {
					t.Errorf("content = %+v; want the note and the short text", c.Content)
				}
			},
			inNote: []string{"Kept: 1 short text item", "Dropped: structuredContent"},
		},
		{
			name: "image and audio dropped, isError kept",
			in: `{"content":[{"type":"image","data":"` + strings.Repeat("A", 6000) + `","mimeType":"image/png"},` +
				`{"type":"audio","data":"` + strings.Repeat("B", 6000) + `","mimeType":"audio/wav"}],"isError":true}`,
			check: func(t *testing.T, c compacted) {
				if !c.IsError || len(c.Content) != 1 {
					t.Errorf("isError, content = %v, %+v; want true and the note only", c.IsError, c.Content)
				}
			},
			inNote: []string{"Kept: isError.", "1 audio item, 1 image item"},
		},
		{
			name: "meta kept and marked, other fields kept",
			in:   `{"content":[` + bigText(9000) + `],"_meta":{"io.github.mcpledger/replay":{"key":"k"},"x":"<a&b>"},"resultType":"complete"}`,
			check: func(t *testing.T, c compacted) {
				if string(c.Meta["x"]) != `"<a&b>"` || string(c.Meta["io.github.mcpledger/replay"]) != `{"key":"k"}` {
					t.Errorf("_meta = %v; want the original members byte for byte", c.Meta)
				}
				if string(c.Extra) != `"complete"` {
					t.Errorf("resultType = %s; want it kept", c.Extra)
				}
			},
			inNote: []string{"Kept: _meta, resultType", "Dropped: 1 text item"},
		},
		{
			name: "many short texts kept in order while they fit",
			in:   `{"content":[` + strings.Repeat(`{"type":"text","text":"`+strings.Repeat("t", 1000)+`"},`, 20) + `{"type":"text","text":"last"}]}`,
			check: func(t *testing.T, c compacted) {
				// 8 KiB holds the note and seven 1 KiB items; "last" still
				// fits after the others are dropped.
				texts := 0
				for _, it := range c.Content[1:] {
					texts++
					if it.Type != "text" {
						t.Errorf("item %+v; want text", it)
					}
				}
				if texts < 5 || c.Content[len(c.Content)-1].Text != "last" {
					t.Errorf("kept %d texts ending %q; want several and the last one", texts, c.Content[len(c.Content)-1].Text)
				}
			},
			inNote: []string{"short text items", "Dropped:"},
		},
		{
			name:   "no content at all",
			in:     `{"structuredContent":"` + strings.Repeat("s", 9000) + `"}`,
			check:  func(t *testing.T, c compacted) {},
			inNote: []string{"Kept: nothing.", "Dropped: structuredContent."},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid([]byte(tc.in)) {
				t.Fatalf("test input is not JSON: %.200s", tc.in)
			}
			got, changed, err := compact.Result(json.RawMessage(tc.in), limit)
			if err != nil || !changed {
				t.Fatalf("Compact(%d bytes, %d) = %v, %v; want a compacted result", len(tc.in), limit, changed, err)
			}
			if len(got) > limit {
				t.Errorf("Compact(%d bytes, %d) = %d bytes; want at most the limit", len(tc.in), limit, len(got))
			}
			c := decodeCompacted(t, got)
			if len(c.Content) == 0 || c.Content[0].Type != "text" {
				t.Fatalf("Compact(...) content = %+v; want the note first", c.Content)
			}
			note := c.Content[0].Text
			if !strings.Contains(note, "the original was "+itoa(len(tc.in))+" bytes") {
				t.Errorf("note = %q; want the original size %d", note, len(tc.in))
			}
			for _, frag := range tc.inNote {
				if !strings.Contains(note, frag) {
					t.Errorf("note = %q; want it to mention %q", note, frag)
				}
			}
			var marker struct {
				OriginalBytes int `json:"originalBytes"`
			}
			if err := json.Unmarshal(c.Meta[compact.MetaKey], &marker); err != nil || marker.OriginalBytes != len(tc.in) {
				t.Errorf("_meta[%s] = %s; want originalBytes %d", compact.MetaKey, c.Meta[compact.MetaKey], len(tc.in))
			}
			tc.check(t, c)

			// A compacted result is stable: compacting it again under the
			// same limit leaves it alone.
			again, changed, err := compact.Result(got, limit)
			if err != nil || changed || string(again) != string(got) {
				t.Errorf("Compact(Compact(x)) changed it again: %v, %v", changed, err)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestCompactOverLimitWhenLinksAloneDoNotFit(t *testing.T) {
	var items []string
	for i := 0; i < 100; i++ {
		items = append(items, `{"type":"resource_link","uri":"orders://`+itoa(i)+`","name":"order"}`)
	}
	in := `{"content":[` + strings.Join(items, ",") + `]}`
	got, changed, err := compact.Result(json.RawMessage(in), 1000)
	if err != nil || !changed {
		t.Fatalf("Compact(%d bytes, 1000) = %v, %v; want compacted", len(in), changed, err)
	}
	c := decodeCompacted(t, got)
	if len(c.Content) != 101 {
		t.Fatalf("Compact kept %d items; want the note and all 100 links (links are never dropped)", len(c.Content))
	}
	if !strings.Contains(c.Content[0].Text, "100 resource links") {
		t.Errorf("note = %q; want it to count the links", c.Content[0].Text)
	}
}

func TestCompactRejects(t *testing.T) {
	cases := []struct{ name, in string }{
		{name: "not JSON", in: strings.Repeat("x", 100)},
		{name: "array", in: `[` + strings.Repeat(`1,`, 60) + `1]`},
		{name: "content not array", in: `{"content":"` + strings.Repeat("x", 100) + `"}`},
		{name: "content item not object", in: `{"content":["` + strings.Repeat("x", 100) + `"]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := compact.Result(json.RawMessage(tc.in), 50)
			if err == nil {
				t.Fatalf("Compact(%q, 50) = %s, nil; want an error", tc.in, got)
			}
			if !strings.HasPrefix(err.Error(), "compact: ") {
				t.Errorf("Compact error = %q; want the package prefix", err)
			}
		})
	}
}

func TestCompactorDefault(t *testing.T) {
	var c compact.Func = compact.Result
	in := json.RawMessage(`{"content":[` + bigText(100) + `]}`)
	got, changed, err := c(in, 64)
	if err != nil || !changed {
		t.Fatalf("Compactor(%d bytes, 64) = %v, %v", len(in), changed, err)
	}
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil || !reflect.DeepEqual(v["content"].([]any)[0].(map[string]any)["type"], "text") {
		t.Fatalf("Compactor result = %s; want a note", got)
	}
}

func TestCompactFitsEveryLimit(t *testing.T) {
	in := `{"content":[{"type":"text","text":"created order 42"},` + bigText(3000) + `,{"type":"text","text":"` +
		strings.Repeat("é", 500) + `"},{"type":"resource_link","uri":"orders://42","name":"order 42"}],` +
		`"structuredContent":{"orderId":42,"lines":"` + strings.Repeat("l", 1500) + `"},"_meta":{"m":"` + strings.Repeat("m", 700) + `"},"isError":false}`
	// Below about 600 bytes the note, the link and isError alone do not fit.
	for limit := 600; limit < len(in); limit += 37 {
		got, changed, err := compact.Result(json.RawMessage(in), limit)
		if err != nil || !changed {
			t.Fatalf("Compact(%d bytes, %d) = %v, %v", len(in), limit, changed, err)
		}
		if len(got) > limit {
			t.Fatalf("Compact(%d bytes, %d) = %d bytes; want at most the limit", len(in), limit, len(got))
		}
		var r mcp.CallToolResult
		if err := json.Unmarshal(got, &r); err != nil {
			t.Fatalf("Compact(..., %d) = %s; go-sdk cannot decode it: %v", limit, got, err)
		}
		if _, ok := r.Content[len(r.Content)-1].(*mcp.ResourceLink); !ok {
			t.Fatalf("Compact(..., %d) content ends with %T; want the resource link", limit, r.Content[len(r.Content)-1])
		}
	}
}

func TestCompactDecodesWithSDK(t *testing.T) {
	in := `{"content":[` + bigText(5000) + `,{"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"` +
		strings.Repeat("z", 5000) + `"}}],"isError":true}`
	got, _, err := compact.Result(json.RawMessage(in), 1024)
	if err != nil {
		t.Fatal(err)
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(got, &r); err != nil {
		t.Fatalf("go-sdk cannot decode %s: %v", got, err)
	}
	if !r.IsError || len(r.Content) != 2 {
		t.Fatalf("decoded %+v; want isError and two items", r)
	}
	res, ok := r.Content[1].(*mcp.EmbeddedResource)
	if !ok || res.Resource.URI != "file:///a" || res.Resource.MIMEType != "text/plain" || res.Resource.Text != "" {
		t.Fatalf("content[1] = %#v; want the resource reference", r.Content[1])
	}
	if r.Meta[compact.MetaKey] == nil {
		t.Fatalf("_meta = %v; want %s", r.Meta, compact.MetaKey)
	}
}

// FuzzCompact checks that compaction never panics, always yields JSON that
// says it was compacted, and is stable: a compacted result that fits is
// left alone by a second pass.
func FuzzCompact(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hello world, a long text"}],"isError":true}`), 40)
	f.Add([]byte(`{"content":[{"type":"resource_link","uri":"x://1"},{"type":"resource","resource":{"uri":"u","blob":"QQ=="}}],"_meta":{"a":1}}`), 30)
	f.Add([]byte(`{"structuredContent":[1,2,3],"resultType":"complete","content":null}`), 10)
	f.Add([]byte(`{"_meta":"x","content":[{"type":"image","data":"AAAA"}]}`), 5)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		if limit <= 0 || limit > 1<<16 {
			return
		}
		got, changed, err := compact.Result(json.RawMessage(data), limit)
		if err != nil {
			return
		}
		if !changed {
			if len(data) > limit || string(got) != string(data) {
				t.Fatalf("Compact(%q, %d) = %q unchanged; want unchanged only when it fits", data, limit, got)
			}
			return
		}
		var r struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal(got, &r); err != nil {
			t.Fatalf("Compact(%q, %d) = %q; not JSON: %v", data, limit, got, err)
		}
		if len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, "compacted") || r.Meta[compact.MetaKey] == nil {
			t.Fatalf("Compact(%q, %d) = %q; want the note and the marker", data, limit, got)
		}
		if len(got) <= limit {
			again, changed, err := compact.Result(got, limit)
			if err != nil || changed || string(again) != string(got) {
				t.Fatalf("Compact(Compact(%q, %d)) = %q, %v, %v; want it unchanged", data, limit, again, changed, err)
			}
		}
	})
}
