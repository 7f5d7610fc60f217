// Command nocgo opens the ledger at its argument; TestOpenWithoutCgo builds
// it with CGO_ENABLED=0. It exits 3 when Open fails with ErrNoDriver.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func main() {
	st, err := sqlite.Open(context.Background(), os.Args[1], nil)
	if err == nil {
		fmt.Println("opened with", sqlite.Driver)
		st.Close()
		return
	}
	fmt.Println(err)
	if errors.Is(err, sqlite.ErrNoDriver) {
		os.Exit(3)
	}
	os.Exit(1)
}
