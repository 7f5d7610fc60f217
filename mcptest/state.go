package mcptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// state is everything the server remembers about calls. With a state file it
// is rebuilt from the file's events, so it survives the process.
type state struct {
	execs  map[string]int       // executions per key
	total  int                  // executions over all keys
	seen   []string             // the key of every attempt, in arrival order
	first  map[string]firstExec // first execution per non-empty key
	faults []Fault              // scripted faults, next first
}

// firstExec is what the Idempotent stand-in replays for a repeated key.
type firstExec struct {
	Args   string          `json:"args"` // canonical arguments, for key reuse
	Result json.RawMessage `json:"result"`
}

// event is one line of the state file; exactly one field is set.
type event struct {
	Seen   *string    `json:"seen,omitempty"`
	Exec   *execEvent `json:"exec,omitempty"`
	Script []Fault    `json:"script,omitempty"`
	Pop    bool       `json:"pop,omitempty"`
}

type execEvent struct {
	Key string `json:"key"`
	firstExec
}

func newState() *state {
	return &state{execs: map[string]int{}, first: map[string]firstExec{}}
}

func (st *state) apply(e event) {
	switch {
	case e.Seen != nil:
		st.seen = append(st.seen, *e.Seen)
	case e.Exec != nil:
		st.execs[e.Exec.Key]++
		st.total++
		if _, ok := st.first[e.Exec.Key]; !ok && e.Exec.Key != "" {
			st.first[e.Exec.Key] = e.Exec.firstExec
		}
	case e.Script != nil:
		for _, f := range e.Script {
			st.faults = append(st.faults, f.expand()...)
		}
	case e.Pop:
		if len(st.faults) > 0 {
			st.faults = st.faults[1:]
		}
	}
}

// journal is the append-only JSON-lines state file. Every change is one
// write of whole lines under an exclusive flock, then fsync, so a process
// that exits right after a change (ExitAfterCommit) has it on disk, and the
// test process and a child can both append (Script from the parent, calls in
// the child) without tearing lines.
type journal struct {
	f    *os.File
	off  int64 // bytes of the file already applied to the state
	torn bool  // the file ends in a line cut short by a crash
}

func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("mcptest: open state file: %w", err)
	}
	return &journal{f: f}, nil
}

// lock takes the file lock and applies events other processes appended
// since the last call. The caller must call unlock.
func (j *journal) lock(st *state) error {
	if err := lockFile(j.f); err != nil {
		return fmt.Errorf("mcptest: lock state file: %w", err)
	}
	if err := j.catchUp(st); err != nil {
		j.unlock()
		return err
	}
	return nil
}

func (j *journal) unlock() {
	// Unlocking a held flock on an open descriptor does not fail; closing
	// the file would release it anyway.
	if err := unlockFile(j.f); err != nil {
		panic("mcptest: unlock state file: " + err.Error())
	}
}

func (j *journal) catchUp(st *state) error {
	data, err := io.ReadAll(io.NewSectionReader(j.f, j.off, 1<<62))
	if err != nil {
		return fmt.Errorf("mcptest: read state file: %w", err)
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			// Lines are written whole under the lock, so a tail without a
			// newline can only be a write cut short by a crash (SIGKILL
			// mid-write). Skip it, and end it before the next append.
			j.off += int64(len(data))
			j.torn = j.torn || len(data) > 0
			return nil
		}
		line := data[:i]
		data = data[i+1:]
		j.off += int64(i + 1)
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// A torn line ended by a later append: it never took effect.
			continue
		}
		st.apply(e)
	}
}

func (j *journal) append(events []event) error {
	var buf bytes.Buffer
	if j.torn {
		buf.WriteByte('\n')
		j.torn = false
	}
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("mcptest: encode event: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if _, err := j.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("mcptest: write state file: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("mcptest: sync state file: %w", err)
	}
	// Our own lines are applied by the caller, not read back.
	j.off += int64(buf.Len())
	return nil
}

func (j *journal) close() error {
	return j.f.Close()
}
