package pgtest_test

import (
	"fmt"

	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// Schema hands each test a URL like this one: the shared test database,
// with search_path naming the test's own schema.
func ExampleWithSearchPath() {
	u, err := pgtest.WithSearchPath("postgres://ci:ci@127.0.0.1:5432/mcpledger_test?sslmode=disable", "t_testclaim_1a2b3c4d")
	if err != nil {
		panic(err)
	}
	fmt.Println(u)
	// Output:
	// postgres://ci:ci@127.0.0.1:5432/mcpledger_test?search_path=t_testclaim_1a2b3c4d&sslmode=disable
}
