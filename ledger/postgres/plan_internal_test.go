package postgres

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/internal/sqlsource"
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
		// As many events, of both tenants, over the same period.
		_, err = c.Exec(ctx, `INSERT INTO events (tenant, tool, side, outcome, duplicate, waited, attempts, latency_ns, at)
		SELECT CASE WHEN i % 2 = 0 THEN 't' ELSE 'other' END, 'create_payment', 'client',
			CASE WHEN i % 10 = 0 THEN 'replayed' ELSE 'executed' END, false, false, 1, i,
			now() + i * interval '1 millisecond'
		FROM generate_series(1, $1::int) AS i`, planRecords)
		if err != nil {
			return err
		}
		_, err = c.Exec(ctx, `ANALYZE records; ANALYZE events`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	explain := func(t *testing.T, query string, args ...any) string {
		t.Helper()
		var lines []string
		err := st.with(ctx, func(c *pgxpool.Conn) error {
			if args == nil {
				var err error
				lines, err = genericPlan(ctx, c, query)
				return err
			}
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
	stmts, err := statements()
	if err != nil {
		t.Fatal(err)
	}
	src, err := sqlsource.Read(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		queries := []string{s.query}
		if s.query == "" {
			queries = src.Literals[s.from]
		}
		for i, query := range queries {
			name := s.name
			if len(queries) > 1 {
				name += " " + strconv.Itoa(i+1)
			}
			t.Run(name, func(t *testing.T) {
				plan := explain(t, query, s.args...)
				if why := knownScans[s.from]; why != "" {
					t.Skipf("%s: a known scan (%s); plan: %s", name, why, plan)
				}
				checkPlan(t, name, plan)
			})
		}
	}
}

// knownScans are the statements whose generic plan PostgreSQL runs as a
// sequential scan on the test's table, and why; each is work left to do.
var knownScans = map[string]string{
	// The test's tenant holds half the table, so reading it all is the
	// cheaper plan; the scratch tenants it erases are small.
	"EraseTenant": "a whole tenant",
}

// checkPlan fails on a plan that reads every row of records or events, and
// on a lookup by key that does not search an index by key.
func checkPlan(t *testing.T, name, plan string) {
	t.Helper()
	if strings.Contains(plan, "Seq Scan on records") || strings.Contains(plan, "Seq Scan on events") {
		t.Errorf("%s reads every row; plan: %s", name, plan)
	}
	// A lookup by key must reach the key through an index, not walk a
	// tenant's records one by one: the planner's estimate is a few pages
	// (an index range of the tenant is thousands).
	if strings.Contains(name, "by key") && (!searchesKey(plan) || totalCost(t, plan) > 100) {
		t.Errorf("%s does not search an index by key; plan: %s", name, plan)
	}
	t.Logf("%s: %s", name, plan)
}

// genericPlan is the plan PostgreSQL makes for query without looking at
// its parameters' values (PostgreSQL 15 has no EXPLAIN (GENERIC_PLAN)):
// query is prepared, and explained with NULL for each parameter under
// plan_cache_mode force_generic_plan, so the NULLs fold nothing away.
func genericPlan(ctx context.Context, c *pgxpool.Conn, query string) ([]string, error) {
	var lines []string
	err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `PREPARE plan_check AS `+query); err != nil {
			return err
		}
		defer func() { _, _ = tx.Exec(ctx, `DEALLOCATE plan_check`) }() // the rollback ends it anyway
		var n int
		if err := tx.QueryRow(ctx, `SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'plan_check'`).Scan(&n); err != nil {
			return err
		}
		nulls := strings.TrimSuffix(strings.Repeat("NULL, ", n), ", ")
		explain := `EXPLAIN EXECUTE plan_check`
		if n > 0 {
			explain += `(` + nulls + `)`
		}
		rows, err := tx.Query(ctx, explain)
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
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		return errors.New("rollback") // nothing of the check stays
	})
	if err != nil && err.Error() != "rollback" {
		return nil, err
	}
	return lines, nil
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
