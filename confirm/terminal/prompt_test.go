package terminal

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
)

func TestTerminalAccessible(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    confirm.Answer
		wantErr error
	}{
		{"approve once", "1\n", confirm.Answer{Decision: ledger.DecisionApproved, By: "alice", Via: "terminal"}, nil},
		{"approve for the session", "2\n", confirm.Answer{Decision: ledger.DecisionApprovedSession, By: "alice", Via: "terminal"}, nil},
		{"deny with a reason", "3\nwrong amount\n",
			confirm.Answer{Decision: ledger.DecisionDenied, By: "alice", Via: "terminal", Reason: "wrong amount"}, nil},
		{"deny without a reason", "3\n\n",
			confirm.Answer{Decision: ledger.DecisionDenied, By: "alice", Via: "terminal", Reason: "denied at the terminal"}, nil},
		{"empty line is deny", "\n\n",
			confirm.Answer{Decision: ledger.DecisionDenied, By: "alice", Via: "terminal", Reason: "denied at the terminal"}, nil},
		{"deny with the input ending at the reason", "3\n",
			confirm.Answer{Decision: ledger.DecisionDenied, By: "alice", Via: "terminal", Reason: "denied at the terminal"}, nil},
		{"invalid choice asks again", "9\nabc\n1\n", confirm.Answer{Decision: ledger.DecisionApproved, By: "alice", Via: "terminal"}, nil},
		{"no input", "", confirm.Answer{}, confirm.ErrNoAnswer},
		{"invalid choice then end of input", "9\n", confirm.Answer{}, confirm.ErrNoAnswer},
		{"no final newline", "2", confirm.Answer{Decision: ledger.DecisionApprovedSession, By: "alice", Via: "terminal"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			term := &Prompt{In: strings.NewReader(tc.input), Out: &out, Accessible: true, User: "alice"}
			got, err := term.Confirm(context.Background(), sampleRequest())
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Fatalf("Confirm with input %q = %+v, %v; want %+v, %v\noutput:\n%s", tc.input, got, err, tc.want, tc.wantErr, out.String())
			}
			for _, want := range []string{"create_payment", "payments", "order-42", `"card_token": "[REDACTED]"`,
				"1. Approve once", "2. Approve for this session", "3. Deny", "Run create_payment on payments?"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestTerminalOverPipe answers like a person: it waits for each prompt on
// the output pipe before typing into the input pipe.
func TestTerminalOverPipe(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	prompts := make(chan string, 8)
	go func() {
		// Collect output and report each prompt (a text ending in ": "
		// with no newline yet, which is how accessible prompts wait).
		r := bufio.NewReader(outR)
		var pending strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			pending.Write(buf[:n])
			if strings.HasSuffix(pending.String(), ": ") {
				prompts <- pending.String()
				pending.Reset()
			}
			if err != nil {
				close(prompts)
				return
			}
		}
	}()

	term := &Prompt{In: inR, Out: outW, Accessible: true, User: "bob"}
	type result struct {
		a   confirm.Answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := term.Confirm(context.Background(), sampleRequest())
		done <- result{a, err}
	}()

	answer := func(wantPrompt, line string) {
		t.Helper()
		p, ok := <-prompts
		if !ok || !strings.Contains(p, wantPrompt) {
			t.Fatalf("prompt = %q; want one containing %q", p, wantPrompt)
		}
		if _, err := io.WriteString(inW, line); err != nil {
			t.Fatal(err)
		}
	}
	answer("Enter a number between 1 and 3", "3\n")
	answer("Reason for denying", "not this card\n")
	r := <-done
	want := confirm.Answer{Decision: ledger.DecisionDenied, By: "bob", Via: "terminal", Reason: "not this card"}
	if r.err != nil || r.a != want {
		t.Errorf("Confirm over a pipe = %+v, %v; want %+v", r.a, r.err, want)
	}
}

func TestTerminalContextCancel(t *testing.T) {
	inR, inW := io.Pipe()
	t.Cleanup(func() { inW.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	term := &Prompt{In: inR, Out: io.Discard, Accessible: true}
	done := make(chan error, 1)
	go func() {
		_, err := term.Confirm(ctx, sampleRequest())
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Confirm after cancel = %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Confirm did not return after its context was cancelled")
	}

	// The abandoned prompt still holds the terminal; a second Confirm
	// waits for its turn and honours its own context meanwhile.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := term.Confirm(ctx2, sampleRequest()); !errors.Is(err, context.Canceled) {
		t.Errorf("second Confirm with a cancelled context = %v; want context.Canceled", err)
	}

	// Ending the input ends the abandoned prompt; the next Confirm gets the
	// terminal (and finds the input ended). This also keeps the abandoned
	// goroutine from outliving the test.
	inW.Close()
	if _, err := term.Confirm(context.Background(), sampleRequest()); !errors.Is(err, confirm.ErrNoAnswer) {
		t.Errorf("Confirm after the input closed = %v; want ErrNoAnswer", err)
	}
}

func TestTerminalNoTTY(t *testing.T) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err == nil {
		f.Close()
		t.Skip("this test process has a controlling terminal")
	}
	_, err = (&Prompt{}).Confirm(context.Background(), sampleRequest())
	if !errors.Is(err, confirm.ErrNoConfirmer) {
		t.Errorf("Prompt{}.Confirm without a terminal = %v; want confirm.ErrNoConfirmer", err)
	}
}

func TestLineReader(t *testing.T) {
	l := &lineReader{r: bufio.NewReader(strings.NewReader("one\ntwo\nthree"))}
	var got []string
	buf := make([]byte, 64)
	for i := 0; i < 10; i++ {
		n, err := l.Read(buf)
		if err != nil {
			break
		}
		got = append(got, string(buf[:n]))
	}
	want := []string{"one\n", "two\n", "three", "\n", "\n", "\n", "\n", "\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") || !l.inputEnded() {
		t.Errorf("reads = %q (ended %v); want %q and ended", got, l.inputEnded(), want)
	}
}
