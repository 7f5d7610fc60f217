package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/mcpledger/mcpledger/cmd/agentctl/internal/console"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// Serve the console; only a request with its token gets in.
func Example() {
	dir, err := os.MkdirTemp("", "console-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	c, err := console.New(console.Options{Store: st, Tenant: "acme", Who: "ana"})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(c)
	defer srv.Close()

	for _, token := range []string{"", c.Token()} {
		req, err := http.NewRequest("GET", srv.URL+"/", nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		req.Header.Set("X-Console-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
	// Output:
	// 401 Unauthorized
	// 200 OK
}
