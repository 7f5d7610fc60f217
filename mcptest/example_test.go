package mcptest_test

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/retry"
)

// A transient failure, a retry with the same key, then a response lost after
// the write executed: the server's counts show what really happened.
func Example() {
	ctx := context.Background()
	s := mcptest.New(nil)
	cs, err := s.Connect(ctx, nil) // in a test: s.ConnectInMemory(ctx, t, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()
	call := func() error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name:      "write",
			Meta:      mcp.Meta{mcptest.MetaKey: "order-42"},
			Arguments: map[string]any{"id": "order-42", "amount": 10},
		})
		return err
	}

	s.Script(mcptest.FailTransient(1), mcptest.DropAfterExecute())
	err = call()
	fmt.Println("first:", retry.Classify(client.Neutral(err)), retry.Reason(client.Neutral(err)))
	err = call()
	fmt.Println("second:", retry.Classify(client.Neutral(err)), "EOF:", errors.Is(err, io.EOF))
	fmt.Println("executions:", s.Executions("order-42"), "keys seen:", s.KeysSeen())
	// Output:
	// first: transient in_progress
	// second: ambiguous EOF: true
	// executions: 1 keys seen: [order-42 order-42]
}
