package guard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/wire"
)

// An adapter hands the guard one request and a function that runs the
// handler; the second request with the same key is answered from the
// record, and the handler runs once.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "guard-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	g := guard.New(st, &guard.Options{Logger: slog.New(slog.DiscardHandler)})
	defer g.Close(ctx)

	runs := 0
	pay := func(ctx context.Context) guard.End {
		runs++
		key, _ := guard.KeyFromContext(ctx) // the downstream's own key
		res := map[string]any{"content": []any{map[string]any{"type": "text", "text": "paid under " + key}}}
		return guard.End{Reply: res, Encode: func() (json.RawMessage, error) { return json.Marshal(res) }}
	}
	req := &guard.Request{Tool: "pay", Meta: map[string]any{wire.MetaKey: "order-1042"}, Arguments: json.RawMessage(`{"amount":5}`)}
	for range 2 {
		switch a := g.Call(ctx, req, pay); {
		case a.Err != nil:
			fmt.Println("error:", a.Err)
		case a.Replay != nil:
			raw, err := guard.Replay(a.Replay)
			if err != nil {
				fmt.Println(err)
				return
			}
			var res struct {
				Content []struct{ Text string }
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				fmt.Println(err)
				return
			}
			fmt.Println("replay:", res.Content[0].Text, "state", a.Replay.State)
		default:
			fmt.Println("ran:", a.Reply.(map[string]any)["content"].([]any)[0].(map[string]any)["text"])
		}
	}
	fmt.Println("runs:", runs)
	// Output:
	// ran: paid under order-1042
	// replay: paid under order-1042 state SUCCEEDED
	// runs: 1
}
