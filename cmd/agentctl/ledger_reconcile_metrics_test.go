package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// agentctl ledger reconcile reports a person's resolution: with the
// OTEL_* variables set, mcpledger.unknown.resolved{method=person} and the
// resolution time reach the collector.
func TestLedgerReconcileExportsResolution(t *testing.T) {
	e := newE2E(t)
	seedLedger(t, filepath.Join(e.dir, "ledger.db"), time.Now().Add(-time.Minute), seedRecord{tool: "create_payment", key: "u-otel", state: ledger.StateUnknown})
	col := newCollector(t)
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"}
	e.runEnv(nil, env, "ledger", "reconcile", "u-otel", "--as", "succeeded", "--note", "payment found").wantExit(t, exitOK)

	col.mu.Lock()
	defer col.mu.Unlock()
	var resolved int64
	var timed uint64
	for _, req := range col.metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					switch m.Name {
					case "mcpledger.unknown.resolved":
						for _, dp := range m.GetSum().GetDataPoints() {
							if a := attrMap(dp.Attributes); a["mcpledger.resolution.method"] == "person" && a["mcpledger.state"] == "SUCCEEDED" && a["gen_ai.tool.name"] == "create_payment" {
								resolved += dp.GetAsInt()
							}
						}
					case "mcpledger.unknown.resolution.duration":
						for _, dp := range m.GetHistogram().GetDataPoints() {
							timed += dp.GetCount()
							if dp.GetSum() < 60 {
								t.Errorf("resolution time %v s; want at least the 60 s the record stood UNKNOWN", dp.GetSum())
							}
						}
					}
				}
			}
		}
	}
	if resolved != 1 || timed != 1 {
		t.Errorf("exported %d person resolutions, %d timed; want 1 and 1", resolved, timed)
	}
}
