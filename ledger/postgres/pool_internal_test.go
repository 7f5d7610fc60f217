package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// The pool is sized for concurrent callers, not by the CPU count, unless
// the options or the URL say otherwise.
func TestPoolSize(t *testing.T) {
	url := pgtest.Schema(t)
	sep := "&"
	if !strings.Contains(url, "?") {
		sep = "?"
	}
	cases := []struct {
		name string
		url  string
		opts *Options
		want int32
	}{
		{"default", url, nil, DefaultMaxConns},
		{"options", url, &Options{MaxConns: 5}, 5},
		{"url", url + sep + "pool_max_conns=3", nil, 3},
		{"options over url", url + sep + "pool_max_conns=3", &Options{MaxConns: 7}, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := Open(context.Background(), tc.url, tc.opts)
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			defer st.Close()
			if got := st.pool.Config().MaxConns; got != tc.want {
				t.Fatalf("pool MaxConns = %d; want %d", got, tc.want)
			}
		})
	}
}
