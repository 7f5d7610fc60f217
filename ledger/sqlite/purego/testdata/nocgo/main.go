// Command nocgo writes or reads one record of the ledger at its second
// argument; TestLedgerMovesBetweenDrivers builds it with CGO_ENABLED=0, so
// it uses the pure-Go driver.
//
//	nocgo write PATH KEY   claim KEY and record it SUCCEEDED with a result
//	nocgo read PATH KEY    print the record's driver, state and result
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	_ "github.com/mcpledger/mcpledger/ledger/sqlite/purego"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: nocgo write|read PATH KEY")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}

func run(ctx context.Context, mode, path, key string) error {
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	id := ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: key}
	if mode == "write" {
		lc := &ledger.Lifecycle{Store: st, Owner: "nocgo"}
		cl, err := lc.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "s1", Fingerprint: "fp-" + key, Arguments: json.RawMessage(`{"amount":42}`), Owner: "nocgo"})
		if err != nil {
			return err
		}
		if _, err := lc.Settle(ctx, ledger.Lease{ID: id, Owner: "nocgo", Fence: cl.Record.Fence}, ledger.StateProcessing,
			ledger.Report{On: ledger.OnSucceeded, Result: json.RawMessage(`{"content":[{"type":"text","text":"paid ` + key + `"}]}`), Attempts: 1}); err != nil {
			return err
		}
	}
	rec, err := st.Get(ctx, id)
	if err != nil {
		return err
	}
	fmt.Println(sqlite.Driver, rec.State, string(rec.Result))
	return nil
}
