package wire_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// A replayed result carries the marker under wire.MetaReplay; a runtime
// tells a replay from a fresh execution by it.
func ExampleReplay() {
	meta := map[string]any{
		wire.MetaReplay: wire.Replay{Key: "order-7", State: "SUCCEEDED", FirstAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), Attempts: 1},
	}
	b, err := json.Marshal(meta)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
	fmt.Println(wire.RetryAfterMs(1500*time.Microsecond), ledger.CodeInProgress, ledger.ReasonStaleFence)
	// Output:
	// {"io.github.mcpledger/replay":{"key":"order-7","state":"SUCCEEDED","firstAt":"2026-12-01T09:00:00Z","attempts":1}}
	// 2 -31002 stale_fence
}
