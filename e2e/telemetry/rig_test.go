package telemetry_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/server"
)

const tenant = "acme"

// payIn is the input of the test tool "pay".
type payIn struct {
	Amount   int            `json:"amount"`
	Payee    string         `json:"payee"`
	Password string         `json:"password,omitempty"`
	Auth     map[string]any `json:"auth,omitempty"`
}

type payOut struct {
	PaymentID string `json:"payment_id"`
}

// rig is a guarded MCP server and an mcpledger client, each on its own
// real SQLite ledger, reporting metrics to one ManualReader and spans to
// one SpanRecorder, and logging JSON into one buffer.
type rig struct {
	t       *testing.T
	reader  *sdkmetric.ManualReader
	spans   *tracetest.SpanRecorder
	mp      *sdkmetric.MeterProvider
	tp      *sdktrace.TracerProvider
	logs    *syncBuffer
	logger  *slog.Logger
	srv     *mcp.Server
	guard   *server.Guard
	sstore  *sqlite.Store
	cstore  *sqlite.Store
	client  *client.Client
	runs    atomic.Int64
	clock   *ledgertest.Clock
	handler atomic.Pointer[handlerFunc]
}

type rigOptions struct {
	server *server.Options
	client *client.Options
	// clock, when set, is the server side's clock (its ledger and Guard).
	clock *ledgertest.Clock
}

func newRig(t *testing.T, ro *rigOptions) *rig {
	t.Helper()
	if ro == nil {
		ro = &rigOptions{}
	}
	r := &rig{t: t, reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder(), logs: &syncBuffer{}}
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	r.logger = slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.clock = ro.clock
	var sopts *sqlite.Options
	if r.clock != nil {
		sopts = &sqlite.Options{Now: r.clock.Now}
	}
	r.sstore = openStore(t, sopts)
	r.cstore = openStore(t, nil)

	r.srv = mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)
	mcp.AddTool(r.srv, &mcp.Tool{Name: "pay"}, func(ctx context.Context, req *mcp.CallToolRequest, in payIn) (*mcp.CallToolResult, payOut, error) {
		n := r.runs.Add(1)
		if h := r.handler.Load(); h != nil {
			if err := (*h)(ctx, req); err != nil {
				return server.ToolError(err), payOut{}, nil
			}
		}
		return nil, payOut{PaymentID: fmt.Sprintf("pay_%d", n)}, nil
	})
	mcp.AddTool(r.srv, &mcp.Tool{Name: "lookup", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "nothing"}}}, nil, nil
		})
	so := server.Options{}
	if ro.server != nil {
		so = *ro.server
	}
	so.Tenant = func(context.Context, *mcp.CallToolRequest) (string, error) { return tenant, nil }
	if so.InProgressWait == 0 {
		so.InProgressWait = 100 * time.Millisecond
	}
	so.RetryAfter = time.Millisecond
	if r.clock != nil {
		so.Now = r.clock.Now
	}
	so.Logger, so.MeterProvider, so.TracerProvider = r.logger, r.mp, r.tp
	r.guard = server.New(r.sstore, &so)
	t.Cleanup(func() {
		if err := r.guard.Close(context.Background()); err != nil {
			t.Errorf("Guard.Close = %v", err)
		}
	})
	r.srv.AddReceivingMiddleware(r.guard.Middleware())
	r.client = r.newClient(r.cstore, ro.client)
	return r
}

// newClient is another agent process: its own Client on store, connected
// to the same server.
func (r *rig) newClient(store ledger.Store, base *client.Options) *client.Client {
	r.t.Helper()
	o := client.Options{}
	if base != nil {
		o = *base
	}
	o.Tenant = tenant
	o.Policy = &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}}
	o.Retry = &retry.Policy{MaxAttempts: 2, Rand: func() float64 { return 0 }, InitialInterval: time.Millisecond}
	o.Logger, o.TracerProvider = r.logger, r.tp
	if o.MeterProvider == nil {
		o.MeterProvider = r.mp
	}
	if o.InProgressWait == 0 {
		o.InProgressWait = 5 * time.Second
	}
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := r.srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	}
	c, err := client.Dial(context.Background(), connect, store, &o)
	if err != nil {
		r.t.Fatalf("client.Dial = %v", err)
	}
	r.t.Cleanup(func() {
		if err := c.Close(); err != nil {
			r.t.Errorf("Client.Close = %v", err)
		}
	})
	return c
}

// handlerFunc, when set, runs inside pay after runs was counted; an error
// becomes pay's tool error.
type handlerFunc func(ctx context.Context, req *mcp.CallToolRequest) error

func (r *rig) setHandler(h handlerFunc) { r.handler.Store(&h) }

func openStore(t testing.TB, opts *sqlite.Options) *sqlite.Store {
	t.Helper()
	if opts == nil {
		opts = &sqlite.Options{}
	}
	opts.Synchronous = sqlite.SyncNormal
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), opts)
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return st
}

func pay(amount int, payee string) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "pay", Arguments: map[string]any{"amount": amount, "payee": payee}}
}

// point is one data point of a collected instrument.
type point struct {
	attrs attribute.Set
	value float64 // a counter's value or a histogram's sum
	count uint64  // a histogram's count
}

// collect reads every data point of the instrument name.
func (r *rig) collect(name string) []point {
	r.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		r.t.Fatalf("Collect = %v", err)
	}
	var out []point
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					out = append(out, point{attrs: dp.Attributes, value: float64(dp.Value)})
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					out = append(out, point{attrs: dp.Attributes, value: dp.Sum, count: dp.Count})
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					out = append(out, point{attrs: dp.Attributes, value: float64(dp.Value)})
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					out = append(out, point{attrs: dp.Attributes, value: dp.Value})
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					out = append(out, point{attrs: dp.Attributes, value: float64(dp.Sum), count: dp.Count})
				}
			default:
				r.t.Fatalf("instrument %s has unexpected data %T", name, m.Data)
			}
		}
	}
	return out
}

// total sums a counter's values (a histogram's counts) over the points
// whose attributes include every pair of match ("k=v").
func (r *rig) total(name string, match ...string) float64 {
	r.t.Helper()
	var sum float64
	for _, p := range r.collect(name) {
		if !matches(p.attrs, match) {
			continue
		}
		if p.count > 0 {
			sum += float64(p.count)
		} else {
			sum += p.value
		}
	}
	return sum
}

func matches(s attribute.Set, match []string) bool {
	for _, m := range match {
		k, v, _ := strings.Cut(m, "=")
		got, ok := s.Value(attribute.Key(k))
		if v == "" {
			if ok {
				return false // "k=" means: attribute absent
			}
			continue
		}
		if !ok || got.String() != v {
			return false
		}
	}
	return true
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of loggers.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
