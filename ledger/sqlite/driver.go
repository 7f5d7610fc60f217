package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/mcpledger/mcpledger/ledger"
)

// getRaw reads one record through the driver directly. Replays are the
// hot read path: skipping database/sql's row machinery and its reflective
// conversions roughly halves the cost of a Get.
func (s *Store) getRaw(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var rec *ledger.Record
	err = conn.Raw(func(dc any) error {
		q, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("sqlite: driver connection %T cannot query", dc)
		}
		rows, err := q.QueryContext(ctx, selectRecord, []driver.NamedValue{
			{Ordinal: 1, Value: id.Tenant}, {Ordinal: 2, Value: id.Tool}, {Ordinal: 3, Value: id.Key},
		})
		if err != nil {
			return err
		}
		defer rows.Close()
		var vals [numColumns]driver.Value
		if err := rows.Next(vals[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return sql.ErrNoRows
			}
			return err
		}
		rec, err = scanRecord(valueScanner(vals[:]))
		return err
	})
	return rec, err
}

// numColumns is the length of the columns list.
const numColumns = 23

// valueScanner assigns driver values to scanRecord's destinations by type,
// without reflection.
type valueScanner []driver.Value

func (v valueScanner) Scan(dest ...any) error {
	if len(dest) != len(v) {
		return fmt.Errorf("sqlite: scan %d columns into %d values", len(v), len(dest))
	}
	for i, d := range dest {
		if err := assign(d, v[i]); err != nil {
			return fmt.Errorf("sqlite: column %d: %w", i, err)
		}
	}
	return nil
}

func assign(dest any, v driver.Value) error {
	switch d := dest.(type) {
	case *string:
		switch x := v.(type) {
		case string:
			*d = x
			return nil
		case []byte:
			*d = string(x)
			return nil
		}
	case *[]byte:
		switch x := v.(type) {
		case nil:
			*d = nil
			return nil
		case []byte:
			*d = x // the driver hands over a fresh copy
			return nil
		case string:
			*d = []byte(x)
			return nil
		}
	case *int64:
		if x, ok := v.(int64); ok {
			*d = x
			return nil
		}
	case *int:
		if x, ok := v.(int64); ok {
			*d = int(x)
			return nil
		}
	case *bool:
		switch x := v.(type) {
		case int64:
			*d = x != 0
			return nil
		case bool:
			*d = x
			return nil
		}
	case *sql.NullString:
		switch x := v.(type) {
		case nil:
			*d = sql.NullString{}
			return nil
		case string:
			*d = sql.NullString{String: x, Valid: true}
			return nil
		}
	}
	return fmt.Errorf("cannot store %T in %T", v, dest)
}
