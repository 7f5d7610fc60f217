package ledgertest_test

import (
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger/ledgertest"
)

// The suite's clock only moves when told to, so lease and retention tests
// never sleep.
func ExampleClock() {
	c := ledgertest.NewClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	lease := c.Now().Add(30 * time.Second)
	c.Advance(29 * time.Second)
	fmt.Println("lease ended:", !c.Now().Before(lease))
	c.Advance(time.Second)
	fmt.Println("lease ended:", !c.Now().Before(lease))
	// Output:
	// lease ended: false
	// lease ended: true
}
