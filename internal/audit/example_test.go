package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpledger/mcpledger/internal/audit"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// Export a ledger, check the file, then find a changed line.
func Example() {
	dir, err := os.MkdirTemp("", "audit-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	id := ledger.ID{Tenant: "acme", Tool: "create_payment", Key: "order-7"}
	c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "f", Arguments: json.RawMessage(`{"amount":1250}`), Owner: "w"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: "w", Fence: c.Record.Fence, Result: json.RawMessage(`{"content":[]}`), AddAttempts: 1}); err != nil {
		fmt.Println(err)
		return
	}

	var file bytes.Buffer
	n, err := audit.Export(ctx, st, &file, audit.Options{Tenant: "acme"})
	fmt.Println("exported", n, err)
	rep, err := audit.Verify(bytes.NewReader(file.Bytes()))
	fmt.Println("intact:", err == nil, rep.Records, "record in", rep.Lines, "lines")

	changed := strings.Replace(file.String(), `"amount":1250`, `"amount":9250`, 1)
	_, err = audit.Verify(strings.NewReader(changed))
	var broken *audit.Broken
	if errors.As(err, &broken) {
		fmt.Println("changed: line", broken.Line)
	}
	// Output:
	// exported 1 <nil>
	// intact: true 1 record in 3 lines
	// changed: line 2
}
