package sqlite

import "github.com/mcpledger/mcpledger/ledger/ledgertest"

// statement is one read the store runs, named, with example arguments: the
// plan test (plan_internal_test.go) asks SQLite how it would run each and
// fails on a full scan of records.
type statement struct {
	name  string
	query string
	args  []any
}

// lookups is every read of records by a key, a session, a state, and the
// UNKNOWN and due lists, in each shape the store builds: List for each
// filter of ledgertest.Lookups, Get, FindRecent, CountUnknown and
// DueUnknown for each of ledgertest.DueLookups. A new read of records
// belongs here or there, so the plan test checks it too.
func lookups() ([]statement, error) {
	const tenant, layer, tool, key, session = ledgertest.LookupTenant, ledgertest.LookupLayer, ledgertest.LookupTool, ledgertest.LookupKey, ledgertest.LookupSession
	var out []statement
	for _, l := range ledgertest.Lookups() {
		q, args, _, err := listQuery(l.Filter)
		if err != nil {
			return nil, err
		}
		out = append(out, statement{"List " + l.Name, q, args})
	}
	out = append(out,
		statement{"Get", selectRecord, []any{tenant, layer, tool, key}},
		statement{"FindRecent", findRecent, []any{tenant, layer, session, tool, "fp", int64(0)}},
		statement{"CountUnknown", countUnknown, nil},
	)
	for _, d := range ledgertest.DueLookups() {
		q, args := dueQuery(d.Query, 0)
		out = append(out, statement{"DueUnknown " + d.Name, q, args})
	}
	return out, nil
}
