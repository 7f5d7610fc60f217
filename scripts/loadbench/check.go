package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpledger/mcpledger/internal/payments"
)

// check compares, for one contender and scenario, the keys answered with
// a result against the keys the payments table holds.
type check struct {
	contender, scenario string
	answered, paid      []string // sorted, each once
}

func (c check) equal() bool { return slices.Equal(c.answered, c.paid) }

// detail names a few keys on each side of a difference.
func (c check) detail() string {
	var unpaid, unanswered []string
	for _, k := range c.answered {
		if _, ok := slices.BinarySearch(c.paid, k); !ok {
			unpaid = append(unpaid, k)
		}
	}
	for _, k := range c.paid {
		if _, ok := slices.BinarySearch(c.answered, k); !ok {
			unanswered = append(unanswered, k)
		}
	}
	return fmt.Sprintf("%d answered but not paid%s, %d paid but not answered with a result%s",
		len(unpaid), few(unpaid), len(unanswered), few(unanswered))
}

func few(keys []string) string {
	switch {
	case len(keys) == 0:
		return ""
	case len(keys) > 3:
		return " (" + strings.Join(keys[:3], ", ") + ", …)"
	}
	return " (" + strings.Join(keys, ", ") + ")"
}

// countPayments reads every slice's keys back from the payments tables.
func countPayments(ctx context.Context, id string, c config, order []contender, results map[string]map[string]outcome) ([]check, error) {
	var checks []check
	for _, sc := range c.scenarios() {
		for _, ct := range order {
			o, ok := results[sc.name][ct.name]
			if !ok {
				continue
			}
			ch := check{contender: ct.title, scenario: sc.name}
			ch.answered = append(append(ch.answered, o.fresh.okKeys...), o.hot.okKeys...)
			slices.Sort(ch.answered)
			ch.answered = slices.Compact(ch.answered)
			for round := range c.rounds {
				keys, err := payments.KeysWithPrefix(ctx, ct.db, keyPrefix(id, sc.name, ct.name, round))
				if err != nil {
					return nil, err
				}
				ch.paid = append(ch.paid, keys...)
			}
			slices.Sort(ch.paid)
			checks = append(checks, ch)
		}
	}
	return checks, nil
}
