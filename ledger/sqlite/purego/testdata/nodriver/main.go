// Command nodriver opens a ledger from a program that imports ledger/sqlite
// but not its pure-Go driver; TestNoDriver builds it with CGO_ENABLED=0 and
// checks what Open says.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func main() {
	st, err := sqlite.Open(context.Background(), os.Args[1], nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	_ = st.Close() // a program that only opens: nothing was written
}
