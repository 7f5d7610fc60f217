package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// fullScans returns the steps of query's plan that read every row of
// records or events: a SCAN of the table itself rather than of one of its
// indexes.
func fullScans(t *testing.T, db *sql.DB, query string, args ...any) (scans []string, plan string) {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN %s: %v", query, err)
	}
	defer func() { _ = rows.Close() }()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, detail)
		table := strings.HasPrefix(detail, "SCAN records") || strings.HasPrefix(detail, "SCAN events")
		if table && !strings.Contains(detail, "USING INDEX") && !strings.Contains(detail, "USING COVERING INDEX") {
			scans = append(scans, detail)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return scans, strings.Join(steps, "; ")
}

// Every statement the store runs (statements, plans_internal_test.go)
// reads records and events through an index, whatever the ledger's size:
// the plan says so, not a timing. A page of List reads its rows in the
// index's order: a sort (a temporary b-tree for the ORDER BY) would read
// every match first. Sorting ties of the index's order ("FOR LAST TERM OF
// ORDER BY") still stops at the page's end.
func TestPlanLookupsUseAnIndex(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	stmts, err := statements()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a full scan is caught", func(t *testing.T) {
		if scans, plan := fullScans(t, st.rdb, `SELECT `+columns+` FROM records WHERE error_message = ?`, "x"); len(scans) == 0 {
			t.Fatalf("a lookup by an unindexed column was not reported as a full scan; plan: %s", plan)
		}
	})
	for _, s := range stmts {
		t.Run(s.name, func(t *testing.T) {
			args := s.args
			if args == nil {
				args = make([]any, strings.Count(s.query, "?"))
			}
			scans, plan := fullScans(t, st.rdb, s.query, args...)
			if len(scans) > 0 {
				t.Errorf("%s reads every record (%s); plan: %s", s.name, strings.Join(scans, ", "), plan)
			}
			// A lookup by key must reach the key through the index, not
			// filter a tenant's records one by one.
			if strings.Contains(s.name, "by key") && !strings.Contains(plan, "key=?") {
				t.Errorf("%s does not search by key; plan: %s", s.name, plan)
			}
			// The re-planning window is one session's calls with one
			// fingerprint, however many records the tool has.
			if s.name == "FindRecent" && !strings.Contains(plan, "fingerprint=?") {
				t.Errorf("%s does not search by session and fingerprint; plan: %s", s.name, plan)
			}
			if strings.HasPrefix(s.name, "List ") && strings.Contains(plan, "TEMP B-TREE FOR ORDER BY") {
				t.Errorf("%s sorts its matches before the first row of a page; plan: %s", s.name, plan)
			}
			t.Logf("%s: %s", s.name, plan)
		})
	}
}
