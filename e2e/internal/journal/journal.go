// Package journal is the record the kill suite's agent keeps of what it
// asked and what it got, one JSON object per line, fsynced after each
// line so that a SIGKILL loses at most the line being written. The test
// reads it back to learn which keys the agent issued and how each was
// answered.
//
//	j, err := journal.Open(path)
//	j.Write(journal.Entry{Event: journal.EventIssue, Key: key})
//	...
//	entries, err := journal.Read(path)
package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/wire"
)

// Events.
const (
	// EventIssue is written before a key's call is made.
	EventIssue = "issue"
	// EventAnswer is written once the call returned.
	EventAnswer = "answer"
)

// Outcomes of an answer.
const (
	OutcomeSucceeded  = "succeeded"  // a result without isError
	OutcomeToolError  = "tool_error" // a result with isError
	OutcomeUnknown    = "unknown"    // client.ErrOutcomeUnknown
	OutcomeNotSent    = "not_sent"   // client.ErrNotSent
	OutcomeInProgress = "in_progress"
	OutcomeDenied     = "denied"
	OutcomeError      = "error" // any other error
)

// MetaError is the _meta entry an agentctl proxy puts on a call the ledger
// answered with an error result ({"key":…, "state":…}).
const MetaError = wire.MetaError

// metaReconciled marks a result that agentctl ledger reconcile stored.
const metaReconciled = wire.MetaReconciled

// Entry is one journal line.
type Entry struct {
	Event string `json:"event"`
	Key   string `json:"key"`
	PID   int    `json:"pid"`

	Outcome   string `json:"outcome,omitempty"`
	PaymentID string `json:"payment_id,omitempty"`
	Replayed  bool   `json:"replayed,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`
	// State is the state of the agent's record for the key.
	State string `json:"state,omitempty"`
	// UpstreamState is the state the proxy's ledger reported in MetaError
	// for an error result.
	UpstreamState string `json:"upstream_state,omitempty"`
	// Reconciled: the result is one a person stored while reconciling.
	Reconciled bool   `json:"reconciled,omitempty"`
	Text       string `json:"text,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Journal appends entries to a file. It is safe for concurrent use.
type Journal struct {
	mu sync.Mutex // guards f: one line at a time
	f  *os.File
}

// Open opens path for appending, creating it.
func Open(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &Journal{f: f}, nil
}

// Write appends e as one line and fsyncs the file.
func (j *Journal) Write(e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// Close closes the file.
func (j *Journal) Close() error { return j.f.Close() }

// Read returns every complete line of the journal at path; a missing file
// is an empty journal. A last line cut short by a kill is dropped.
func Read(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	var out []Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			if !bytes.HasSuffix(data, []byte("\n")) && bytes.HasSuffix(data, line) {
				break // the torn last line
			}
			return nil, fmt.Errorf("journal: %s: line %q: %w", path, line, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// Arguments are the create_payment arguments the agent sends with key.
// They depend on the key alone, so a restarted agent sends the same
// fingerprint.
func Arguments(key string) map[string]any {
	return map[string]any{"amount_cents": 1999, "currency": "EUR", "payee": "kill-suite", "memo": key}
}

// Describe fills e's outcome from a result the call returned.
func Describe(res *mcp.CallToolResult, e *Entry) {
	if res == nil {
		e.Outcome = OutcomeError
		e.Error = "no result"
		return
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			e.Text = t.Text
			break
		}
	}
	if _, ok := res.Meta[metaReconciled]; ok {
		e.Reconciled = true
	}
	if res.IsError {
		e.Outcome = OutcomeToolError
		if m, ok := res.Meta[MetaError].(map[string]any); ok {
			e.UpstreamState, _ = m["state"].(string)
		}
		return
	}
	e.Outcome = OutcomeSucceeded
	if m, ok := res.StructuredContent.(map[string]any); ok {
		e.PaymentID, _ = m["payment_id"].(string)
	}
}
