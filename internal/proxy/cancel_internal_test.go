package proxy

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestResponseID(t *testing.T) {
	num, _ := jsonrpc.MakeID(float64(2))
	str, _ := jsonrpc.MakeID("a")
	for _, tc := range []struct {
		line string
		want jsonrpc.ID
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":2,"error":{"code":0,"message":"context canceled"}}`, num, true},
		{`{"jsonrpc":"2.0","id":"a","result":{"content":[]}}` + "\n", str, true},
		{`{"result":{},"id":2}`, jsonrpc.ID{}, false}, // the id after the result is not read
		{`{"jsonrpc":"2.0","id":2,"method":"ping"}`, jsonrpc.ID{}, false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, jsonrpc.ID{}, false},
		{`not json`, jsonrpc.ID{}, false},
	} {
		got, ok := responseID([]byte(tc.line))
		if ok != tc.ok || got != tc.want {
			t.Errorf("responseID(%s) = %v, %v; want %v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCancelledSetDropsOnlyTheCancelledResponse(t *testing.T) {
	var c cancelledSet
	id, ok := cancelledID([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"stop"}}`))
	if !ok {
		t.Fatal("cancelledID found no id")
	}
	c.add(id)
	if c.take([]byte(`{"jsonrpc":"2.0","id":8,"result":{}}`)) {
		t.Error("the response to request 8 was dropped; only 7 was cancelled")
	}
	if !c.take([]byte(`{"jsonrpc":"2.0","id":7,"error":{"code":0,"message":"context canceled"}}`)) {
		t.Error("the response to the cancelled request 7 was written")
	}
	if c.take([]byte(`{"jsonrpc":"2.0","id":7,"result":{}}`)) {
		t.Error("a second response with id 7 was dropped; one cancel drops one response")
	}
	for i := range maxCancelled + 10 {
		id, _ := jsonrpc.MakeID(fmt.Sprintf("r%d", i))
		c.add(id)
	}
	if len(c.ids) != maxCancelled || len(c.order) != maxCancelled {
		t.Errorf("remembered %d ids (%d in order); want at most %d", len(c.ids), len(c.order), maxCancelled)
	}
}

func TestCodedErrors(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	rpc := &jsonrpc.Error{Code: -31003, Message: "unknown"}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want int64
	}{
		{"a plain error", context.Background(), errors.New("proxy: upstream gone"), jsonrpc.CodeInternalError},
		{"a cancelled request", canceled, context.Canceled, jsonrpc.CodeInternalError},
		{"a coded error, wrapped", context.Background(), fmt.Errorf("proxy: %w", rpc), -31003},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := codedErrors(func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, tc.err })
			_, err := h(tc.ctx, "tools/call", nil)
			je, ok := errs.AsType[*jsonrpc.Error](err)
			if !ok || je.Code != tc.want {
				t.Fatalf("codedErrors(%v) = %v; want code %d", tc.err, err, tc.want)
			}
		})
	}
}
