package proxy

import (
	"io"
	"strings"
	"testing"
)

// TestSSECounter: the relayed notifications of an event stream are counted
// however the stream is cut into reads; responses, requests, other methods
// and comments are not.
func TestSSECounter(t *testing.T) {
	stream := strings.Join([]string{
		": a comment",
		"",
		"event: message",
		"id: 1",
		`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a"}}`,
		"",
		`data: {"jsonrpc":"2.0","method":"notifications/progress",`,
		`data: "params":{"progressToken":1,"progress":1}}`,
		"",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{}}\r",
		"\r",
		`data: {"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{}}`,
		"",
		`data: {"jsonrpc":"2.0","method":"notifications/custom"}`,
		"",
		`data: {"jsonrpc":"2.0","id":3,"result":{}}`,
		"",
		`data:{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x"}}`,
		"",
		"",
	}, "\n")
	const want = 3
	for _, size := range []int{1, 2, 7, 64, len(stream)} {
		o := &order{}
		c := &sseCounter{ReadCloser: io.NopCloser(&chunks{s: stream, n: size}), o: o}
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("reads of %d: ReadAll = %v", size, err)
		}
		if string(b) != stream {
			t.Errorf("reads of %d: the stream changed", size)
		}
		if got := o.read.Load(); got != want {
			t.Errorf("reads of %d: counted %d notifications; want %d", size, got, want)
		}
	}
}

// chunks reads s at most n bytes at a time.
type chunks struct {
	s string
	n int
}

func (c *chunks) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.s))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}
