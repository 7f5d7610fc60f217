package postgres

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// planRecords is how many records the plan test's table holds: enough that
// a sequential scan costs more than an index, so the plan shows which one
// PostgreSQL would take on a large ledger.
const planRecords = 100000

// Every lookup the store runs (lookups, plans.go) reads records through an
// index on a table of planRecords records with ANALYZE statistics: the
// plan says so, not a timing.
func TestPlanLookupsUseAnIndex(t *testing.T) {
	url := pgtest.Schema(t)
	ctx := context.Background()
	st, err := Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	// Half the records are the lookups' tenant's; one in a hundred is
	// UNKNOWN; the rest are settled, in four tools and one session per
	// hundred records.
	err = st.with(ctx, func(c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO records (tenant, layer, tool, key, session, fingerprint, arguments, state,
			created_at, updated_at, expires_at, reconcile_at)
		SELECT CASE WHEN i % 2 = 0 THEN 't' ELSE 'other' END, 'client', (ARRAY['create_payment', 'refund', 'get_balance', 'send_email'])[i % 4 + 1],
			'bulk-' || i, 's-' || (i / 100), 'fp-' || (i % 1000), '\x7b7d'::bytea,
			CASE WHEN i % 100 = 7 THEN 'UNKNOWN' ELSE 'SUCCEEDED' END,
			now() + i * interval '1 millisecond', now() + i * interval '1 millisecond', now() + interval '1 day',
			now() + i * interval '1 millisecond'
		FROM generate_series(1, $1::int) AS i`, planRecords)
		if err != nil {
			return err
		}
		_, err = c.Exec(ctx, `ANALYZE records`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	explain := func(t *testing.T, query string, args ...any) string {
		t.Helper()
		var lines []string
		err := st.with(ctx, func(c *pgxpool.Conn) error {
			rows, err := c.Query(ctx, "EXPLAIN "+query, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					return err
				}
				lines = append(lines, strings.TrimSpace(line))
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatalf("EXPLAIN %s: %v", query, err)
		}
		return strings.Join(lines, "; ")
	}
	t.Run("a full scan is caught", func(t *testing.T) {
		if plan := explain(t, `SELECT `+recordCols+` FROM records WHERE error_message = $1`, "x"); !strings.Contains(plan, "Seq Scan on records") {
			t.Fatalf("a lookup by an unindexed column shows no sequential scan; plan: %s", plan)
		}
	})
	stmts, err := lookups()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		t.Run(s.name, func(t *testing.T) {
			plan := explain(t, s.query, s.args...)
			if strings.Contains(plan, "Seq Scan on records") {
				t.Errorf("%s reads every record; plan: %s", s.name, plan)
			}
			// A lookup by key must reach the key through an index, not
			// walk a tenant's records one by one: the planner's estimate
			// is a few pages (an index range of the tenant is thousands).
			if strings.Contains(s.name, "by key") && (!searchesKey(plan) || totalCost(t, plan) > 100) {
				t.Errorf("%s does not search an index by key; plan: %s", s.name, plan)
			}
			t.Logf("%s: %s", s.name, plan)
		})
	}
}

// searchesKey reports whether one of plan's index conditions is on key.
func searchesKey(plan string) bool {
	for _, step := range strings.Split(plan, "; ") {
		if strings.HasPrefix(step, "Index Cond:") && strings.Contains(step, "(key = ") {
			return true
		}
	}
	return false
}

var costRE = regexp.MustCompile(`cost=[0-9.]+\.\.([0-9.]+)`)

// totalCost is the planner's estimated total cost of plan's first step.
func totalCost(t *testing.T, plan string) float64 {
	t.Helper()
	m := costRE.FindStringSubmatch(plan)
	if m == nil {
		t.Fatalf("no cost in plan %s", plan)
	}
	c, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("cost %q: %v", m[1], err)
	}
	return c
}
