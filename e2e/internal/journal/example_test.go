package journal_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpledger/mcpledger/e2e/internal/journal"
)

func Example() {
	dir, err := os.MkdirTemp("", "journal")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agent.jsonl")

	j, err := journal.Open(path)
	if err != nil {
		panic(err)
	}
	j.Write(journal.Entry{Event: journal.EventIssue, Key: "order-1"})
	j.Write(journal.Entry{Event: journal.EventAnswer, Key: "order-1", Outcome: journal.OutcomeSucceeded, PaymentID: "pay_1"})
	j.Close()

	entries, err := journal.Read(path)
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		fmt.Println(strings.TrimSpace(fmt.Sprintln(e.Event, e.Key, e.Outcome, e.PaymentID)))
	}
	// Output:
	// issue order-1
	// answer order-1 succeeded pay_1
}
