//go:build !cgo

package payments

import (
	"errors"

	"github.com/mcpledger/mcpledger/internal/sqlitedialect"
)

// appDriver: without cgo the example's database uses the pure-Go driver
// the ledger uses then, which the program brings in by importing
// ledger/sqlite/purego, with the settings of driver_cgo.go in its keys.
func appDriver() (name, settings string, err error) {
	d := sqlitedialect.Pure()
	if d == nil {
		return "", "", errors.New("payments: " + sqlitedialect.Missing)
	}
	return d.SQLDriver, d.AppDSN, nil
}
