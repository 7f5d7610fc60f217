package postgres

import (
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// statement is one read the store runs, named, with example arguments: the
// plan test (plan_internal_test.go) asks PostgreSQL how it would run
// each, on a table of 100,000 records with statistics, and fails on a
// sequential scan of records.
type statement struct {
	name  string
	query string
	args  []any
}

// lookups is every read of records by a key, a session, a state, and the
// UNKNOWN and due lists, in each shape the store builds: List for each
// filter the CLI, the console, the client and the planner use, Get,
// FindRecent, CountUnknown and DueUnknown. A new read of records belongs
// here, so the plan test checks it too.
func lookups() ([]statement, error) {
	const tenant, layer, tool, key, session = "t", ledger.LayerClient, "create_payment", "k-1", "s-1"
	cursor := ledger.EncodeCursor(&ledger.Record{ID: ledger.ID{Tenant: tenant, Layer: layer, Tool: tool, Key: key}, CreatedAt: time.Unix(1, 0)})
	filters := []struct {
		name string
		f    ledger.Filter
	}{
		{"list", ledger.Filter{}},
		{"list next page", ledger.Filter{Cursor: cursor}},
		{"by key", ledger.Filter{Key: key}},
		{"by key and tool", ledger.Filter{Key: key, Tool: tool}},
		{"by key and layer", ledger.Filter{Key: key, Layer: layer}},
		{"by key and state", ledger.Filter{Key: key, State: ledger.StateSucceeded}},
		{"by key in a session", ledger.Filter{Key: key, Layer: layer, Session: session}},
		{"by key next page", ledger.Filter{Key: key, Cursor: cursor}},
		{"by session", ledger.Filter{Session: session}},
		{"by session and tool", ledger.Filter{Layer: layer, Session: session, Tool: tool}},
		{"by state", ledger.Filter{State: ledger.StateUnknown}},
		{"by tool", ledger.Filter{Tool: tool}},
		{"since", ledger.Filter{Since: time.Unix(1, 0)}},
	}
	var out []statement
	for _, c := range filters {
		c.f.Tenant = tenant
		q, args, _, err := listQuery(c.f)
		if err != nil {
			return nil, err
		}
		out = append(out, statement{"List " + c.name, q, args})
	}
	out = append(out,
		statement{"Get", selectRecord, []any{tenant, layer, tool, key}},
		statement{"FindRecent", findRecent, []any{tenant, layer, session, tool, "fp", time.Unix(1, 0)}},
		statement{"CountUnknown", countUnknown, nil},
	)
	dues := []struct {
		name string
		q    ledger.DueQuery
	}{
		{"tenant", ledger.DueQuery{Tenant: tenant}},
		{"every tenant", ledger.DueQuery{AllTenants: true}},
		{"tools", ledger.DueQuery{Tenant: tenant, Tools: []string{tool, "refund"}}},
		{"tools of every tenant", ledger.DueQuery{AllTenants: true, Tools: []string{tool}}},
		{"layers", ledger.DueQuery{Tenant: tenant, Layers: []string{layer}}},
	}
	for _, d := range dues {
		q, args := dueQuery(d.q, time.Unix(1, 0))
		out = append(out, statement{"DueUnknown " + d.name, q, args})
	}
	return out, nil
}
