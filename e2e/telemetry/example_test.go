package telemetry_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/telemetry"
)

// A client reports to the MeterProvider it is given; here an SDK provider
// with a manual reader stands in for a real exporter. The same calls also
// leave events in the ledger, which "agentctl ledger stats" reads.
func Example() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	srv := mcp.NewServer(&mcp.Implementation{Name: "orders", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "create_order"}, func(context.Context, *mcp.CallToolRequest, struct {
		Item string `json:"item"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "order 17 created"}}}, nil, nil
	})
	serverT, clientT := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, serverT, nil); err != nil {
		panic(err)
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "mcpledger-telemetry-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	c := client.New(session, store, &client.Options{
		Tenant:        "acme",
		Policy:        &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}},
		MeterProvider: provider,
	})
	ctx = client.WithChain(ctx, "checkout-1001")
	for range 3 {
		if _, err := c.Call(ctx, &mcp.CallToolParams{Name: "create_order", Arguments: map[string]any{"item": "book"}}); err != nil {
			panic(err)
		}
	}
	// Close writes the queued call events.
	if err := c.Close(); err != nil {
		panic(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != telemetry.MetricCalls {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				outcome, _ := dp.Attributes.Value(telemetry.AttrOutcome)
				lines = append(lines, fmt.Sprintf("%s{%s=%s} %d", m.Name, telemetry.AttrOutcome, outcome.String(), dp.Value))
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	st, err := store.Stats(context.Background(), ledger.StatsQuery{Tenant: "acme"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("from the ledger: %d calls, duplicate hit rate %.0f%%\n", st.Calls, 100*st.DuplicateHitRate())
	// Output:
	// mcpledger.calls{mcpledger.outcome=replayed} 2
	// mcpledger.calls{mcpledger.outcome=succeeded} 1
	// from the ledger: 3 calls, duplicate hit rate 67%
}
