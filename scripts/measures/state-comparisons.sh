#!/bin/sh
# Lists the non-test comparisons of a ledger state outside ledger/ (==, !=,
# case) and prints their count last. DESIGN: nothing outside ledger/ decides
# what a state means; presentation may switch on a state. Run from the
# repository root: scripts/measures/state-comparisons.sh
set -eu
grep -rn 'ledger\.State[A-Z]' --include='*.go' . |
	grep -v '_test\.go:' | grep -v '^\./ledger/' |
	grep -E '(==|!=) *ledger\.State[A-Z]|ledger\.State[A-Za-z]* *(==|!=)|case .*ledger\.State[A-Z]' >/tmp/state-comparisons.$$ || true
cat /tmp/state-comparisons.$$
echo "$(wc -l </tmp/state-comparisons.$$ | tr -d ' ') lines compare or switch on a ledger state outside ledger/"
rm -f /tmp/state-comparisons.$$
