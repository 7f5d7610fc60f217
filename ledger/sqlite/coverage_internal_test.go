package sqlite

import (
	"testing"

	"github.com/mcpledger/mcpledger/internal/sqlsource"
)

// notChecked are the holders of SQL of records or events that the plan
// test leaves out, and why.
var notChecked = map[string]string{
	"migrate": "schema changes, each run once",
}

// The plan test's list of statements comes from the code: every constant
// or function of this package that holds SQL of records or events is the
// source of a statement the plan test checks, so a new query cannot skip
// the check.
func TestPlanChecksEveryStatement(t *testing.T) {
	stmts, err := statements()
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]bool{}
	for _, s := range stmts {
		checked[s.from] = true
	}
	sqlsource.CheckCovered(t, ".", checked, notChecked)
}
