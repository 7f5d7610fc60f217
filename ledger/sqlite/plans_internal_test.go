package sqlite

import (
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
)

// statement is one statement the store runs, named, with example
// arguments (nil binds NULL to every parameter, which does not change
// SQLite's plan): the plan test (plan_internal_test.go) asks SQLite how it
// would run each and fails on a full scan of records or events. from names
// the constant or function of the package that holds its SQL: the
// coverage test reads the package's source and fails on SQL of records or
// events that no statement here comes from.
type statement struct {
	name  string
	from  string
	query string
	args  []any
}

// lookups is every read of records by a key, a session, a state, and the
// UNKNOWN and due lists, in each shape the store builds: List for each
// filter of ledgertest.Lookups, Get, FindRecent, CountUnknown, CountOpen and
// DueUnknown for each of ledgertest.DueLookups.
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
		statement{"FindRecent", "findRecent", findRecent, []any{tenant, layer, session, tool, "fp", int64(0)}},
		statement{"CountUnknown", "countUnknown", countUnknown, nil},
		statement{"CountOpen UNKNOWN", "openUnknown", openUnknown, nil},
		statement{"CountOpen PENDING_APPROVAL", "openApproval", openApproval, nil},
	)
	for _, d := range ledgertest.DueLookups() {
		q, args := dueQuery(d.Query, 0)
		out = append(out, statement{"DueUnknown " + d.Name, "dueQuery", q, args})
	}
	return out, nil
}

// statements is every statement of records and events the store runs:
// the lookups, the writes of the lifecycle, purge and its preview, the
// event log's appends, statistics and retention, EraseTenant, the rekey
// walk and the sealed probe. A new statement belongs here; the coverage
// test fails until it is.
func statements() ([]statement, error) {
	out, err := lookups()
	if err != nil {
		return nil, err
	}
	events, _ := insertEvents([]ledger.Event{{}, {}})
	return append(out,
		statement{"Claim insert", "insertClaim", insertClaim, nil},
		statement{"Claim replace expired", "replaceExpired", replaceExpired, nil},
		statement{"Claim reclaim", "reclaim", reclaim, nil},
		statement{"Transition", "transition", transition, nil},
		statement{"Renew", "renew", renew, nil},
		statement{"ExpireLeases", "expireLeases", expireLeases, nil},
		statement{"Purge delete", "purgeDelete", purgeDelete, nil},
		statement{"Purge tombstone", "purgeTombstone", purgeTombstone, nil},
		statement{"PurgePreview", "purgePreview", purgePreview, nil},
		statement{"EraseTenant records", "eraseRecords", eraseRecords, nil},
		statement{"EraseTenant events", "eraseEvents", eraseEvents, nil},
		statement{"AppendEvents", "insertEvents", events, nil},
		statement{"Stats counts", "statsCounts", statsCounts, nil},
		statement{"Stats replay latency", "statsReplay", statsReplay, nil},
		statement{"Stats UNKNOWN", "statsUnknown", statsUnknown, nil},
		statement{"PurgeEvents", "purgeEvents", purgeEvents, nil},
		statement{"RewritePayloads page", "rewriteSelect", rewriteSelect, nil},
		statement{"RewritePayloads update", "rewriteUpdate", rewriteUpdate, nil},
		statement{"SealedKeyID", "sealedProbe", sealedProbe, nil},
		statement{"EventSeries counts", "seriesCounts", seriesCounts, nil},
		statement{"EventSeries latency", "seriesLatency", seriesLatency, nil},
	), nil
}
