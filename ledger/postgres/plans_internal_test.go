package postgres

import (
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
)

// statement is one statement the store runs, named, with example
// arguments: the plan test (plan_internal_test.go) asks PostgreSQL how it
// would run each, on tables of 100,000 records and events with
// statistics, and fails on a sequential scan of records or events.
// Without arguments it asks for the generic plan, the one made without
// looking at the values. from names the constant or function of the
// package that holds its SQL: the coverage test reads the package's source
// and fails on SQL of records or events that no statement here comes
// from. A statement with no query stands for the SQL literals written in
// its function, read from the source.
type statement struct {
	name  string
	from  string
	query string
	args  []any
}

// lookups is every read of records by a key, a session, a state, and the
// UNKNOWN and due lists, in each shape the store builds: List for each
// filter of ledgertest.Lookups, Get, FindRecent, CountUnknown, CountOpen and
// DueUnknown for each of ledgertest.DueLookups. A new read of records
// belongs here or in statements, so the plan test checks it too.
func lookups() ([]statement, error) {
	const tenant, layer, tool, key, session = ledgertest.LookupTenant, ledgertest.LookupLayer, ledgertest.LookupTool, ledgertest.LookupKey, ledgertest.LookupSession
	var out []statement
	for _, l := range ledgertest.Lookups() {
		q, args, _, err := listQuery(l.Filter)
		if err != nil {
			return nil, err
		}
		out = append(out, statement{"List " + l.Name, "listQuery", q, args})
	}
	out = append(out,
		statement{"Get", "selectRecord", selectRecord, []any{tenant, layer, tool, key}},
		statement{"FindRecent", "findRecent", findRecent, []any{tenant, layer, session, tool, "fp", time.Unix(1, 0)}},
		statement{"CountUnknown", "countUnknown", countUnknown, nil},
		statement{"CountOpen UNKNOWN", "openUnknown", openUnknown, nil},
		statement{"CountOpen PENDING_APPROVAL", "openApproval", openApproval, nil},
	)
	for _, d := range ledgertest.DueLookups() {
		q, args := dueQuery(d.Query, time.Unix(1, 0))
		out = append(out, statement{"DueUnknown " + d.Name, "dueQuery", q, args})
	}
	return out, nil
}

// statements is every statement of records and events the store runs:
// the lookups, claims (one and merged), each shape of transition (one and
// merged), lease expiry, purge and its preview, the event log's appends,
// statistics and retention, and the statements written inline in the
// functions that run them. A new statement belongs here; the coverage
// test fails until it is.
func statements() ([]statement, error) {
	now := time.Now().UTC()
	hourAgo := now.Add(-time.Hour)
	out, err := lookups()
	if err != nil {
		return nil, err
	}
	out = append(out,
		statement{"Claim insert", "claimInsert", claimInsert, nil},
		statement{"Claim inserts merged", "claimInserts", claimInserts, nil},
		statement{"Claim replace expired", "claimReplaceExpired", claimReplaceExpired, nil},
		statement{"Claim reclaim", "claimReclaim", claimReclaim, nil},
		statement{"Claim select", "claimSelect", claimSelect, nil},
		statement{"ExpireLeases", "expireBatch", expireBatch, nil},
		statement{"ExpireLeases portable", "expireBatchPortable", expireBatchPortable, nil},
		// Purge's plan with its values: the expiry of now, and a cut-off
		// of last updates an hour ago or none, on a table where few
		// records are due (a sweep keeps up), as the ANALYZE statistics
		// say.
		statement{"Purge", "purgeBatch", purgeBatch, []any{now, nil, 1000, now, []byte("token"), ""}},
		statement{"Purge older than", "purgeBatch", purgeBatch, []any{now, hourAgo, 1000, now, []byte("token"), ""}},
		statement{"Purge portable", "purgeBatchPortable", purgeBatchPortable, []any{now, nil, 1000, now, []byte("token"), ""}},
		statement{"PurgePreview", "purgePreview", purgePreview, []any{now, nil, ""}},
		statement{"PurgePreview older than", "purgePreview", purgePreview, []any{now, hourAgo, ""}},
		statement{"AppendEvents", "insertEvents", insertEvents, nil},
		statement{"Stats", "statsQuery", statsQuery, nil},
		statement{"EventSeries counts", "seriesCounts", seriesCounts, nil},
		statement{"EventSeries latency", "seriesLatency", seriesLatency, nil},
	)
	out = append(out, statement{"PurgeEvents", "purgeEvents", purgeEvents, []any{time.Unix(1, 0), 5000}})
	for _, from := range []string{"EraseTenant", "watch", "RewritePayloads", "SealedKeyID", "Renew"} {
		out = append(out, statement{name: from, from: from})
	}
	// The WHERE of every shape is the record's primary key; the shapes
	// differ in what they set and check.
	for _, sh := range []transitionShape{
		{from: ledger.StateProcessing, to: ledger.StateSucceeded, result: true, fenced: true},
		{from: ledger.StateProcessing, to: ledger.StateUnknown, errorText: true, fenced: true},
		{from: ledger.StateUnknown, to: ledger.StateProcessing, fenced: true, bump: true},
		{from: ledger.StateUnknown, to: ledger.StateUnknown, finding: true, keepUpdated: true},
		{from: ledger.StatePendingApproval, to: ledger.StateProcessing, approval: true, fenced: true, bump: true},
	} {
		name := fmt.Sprintf("Transition %s -> %s", sh.from, sh.to)
		out = append(out,
			statement{name, "transitionSQL", transitionSQL(sh), nil},
			statement{name + " merged", "mergedTransitionSQL", mergedTransitionSQL(sh), nil})
	}
	return out, nil
}
