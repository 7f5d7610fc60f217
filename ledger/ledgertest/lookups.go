package ledgertest

import (
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// The identity the lookup shapes below name.
const (
	LookupTenant  = "t"
	LookupLayer   = ledger.LayerClient
	LookupTool    = "create_payment"
	LookupKey     = "k-1"
	LookupSession = "s-1"
)

// Lookup is one shape of a read of records, named.
type Lookup struct {
	Name   string
	Filter ledger.Filter
}

// Lookups lists every List filter the CLI, the console, the client and the
// planner use, for the stores' plan tests: each store builds the statement
// of each and checks that it uses an index. A new shape of List belongs
// here, so every store's plan test checks it.
func Lookups() []Lookup {
	cursor := ledger.EncodeCursor(&ledger.Record{ID: ledger.ID{Tenant: LookupTenant, Layer: LookupLayer, Tool: LookupTool, Key: LookupKey}, CreatedAt: time.Unix(1, 0)})
	ls := []Lookup{
		{"list", ledger.Filter{}},
		{"list next page", ledger.Filter{Cursor: cursor}},
		{"by key", ledger.Filter{Key: LookupKey}},
		{"by key and tool", ledger.Filter{Key: LookupKey, Tool: LookupTool}},
		{"by key and layer", ledger.Filter{Key: LookupKey, Layer: LookupLayer}},
		{"by key and state", ledger.Filter{Key: LookupKey, State: ledger.StateSucceeded}},
		{"by key in a session", ledger.Filter{Key: LookupKey, Layer: LookupLayer, Session: LookupSession}},
		{"by key next page", ledger.Filter{Key: LookupKey, Cursor: cursor}},
		{"by session", ledger.Filter{Session: LookupSession}},
		{"by session and tool", ledger.Filter{Layer: LookupLayer, Session: LookupSession, Tool: LookupTool}},
		{"by state", ledger.Filter{State: ledger.StateUnknown}},
		{"by tool", ledger.Filter{Tool: LookupTool}},
		{"since", ledger.Filter{Since: time.Unix(1, 0)}},
	}
	for i := range ls {
		ls[i].Filter.Tenant = LookupTenant
	}
	return ls
}

// DueLookup is one shape of a due-list query, named.
type DueLookup struct {
	Name  string
	Query ledger.DueQuery
}

// DueLookups lists every DueQuery shape the sweeps use, for the stores'
// plan tests.
func DueLookups() []DueLookup {
	return []DueLookup{
		{"tenant", ledger.DueQuery{Tenant: LookupTenant}},
		{"every tenant", ledger.DueQuery{AllTenants: true}},
		{"tools", ledger.DueQuery{Tenant: LookupTenant, Tools: []string{LookupTool, "refund"}}},
		{"tools of every tenant", ledger.DueQuery{AllTenants: true, Tools: []string{LookupTool}}},
		{"layers", ledger.DueQuery{Tenant: LookupTenant, Layers: []string{LookupLayer}}},
	}
}
