//go:build unix

package terminal

import (
	"errors"
	"io"
	"os"
	"runtime"
	"testing"
	"time"
)

func TestTTYInputReads(t *testing.T) {
	r, w := pipe(t)
	in, err := newTTYInput(r)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	if _, err := w.WriteString("abc"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	n, err := in.Read(buf)
	if err != nil || string(buf[:n]) != "abc" {
		t.Errorf("Read = %q, %v; want \"abc\", nil", buf[:n], err)
	}
}

// Closing ends a read that is waiting, and the read has taken nothing: what
// is written afterwards is still in the file for whoever reads it next.
func TestTTYInputCloseEndsAPendingRead(t *testing.T) {
	r, w := pipe(t)
	in, err := newTTYInput(r)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int
		err error
	}
	read := make(chan result, 1)
	go func() {
		n, err := in.Read(make([]byte, 8))
		read <- result{n, err}
	}()
	for in.mu.TryLock() { // until the Read holds the input
		in.mu.Unlock()
		runtime.Gosched()
	}
	in.close()
	select {
	case res := <-read:
		if res.n != 0 || !errors.Is(res.err, io.EOF) {
			t.Errorf("pending Read after close = %d, %v; want 0, io.EOF", res.n, res.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("close did not end a pending Read")
	}
	if n, err := in.Read(make([]byte, 8)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("Read after close = %d, %v; want 0, io.EOF", n, err)
	}

	if _, err := w.WriteString("next"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "next" {
		t.Errorf("the file after close reads %q, %v; want \"next\"", buf[:n], err)
	}
}

func TestTTYInputStopEndsAPendingRead(t *testing.T) {
	r, _ := pipe(t)
	in, err := newTTYInput(r)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	read := make(chan error, 1)
	go func() {
		_, err := in.Read(make([]byte, 8))
		read <- err
	}()
	in.stop()
	select {
	case err := <-read:
		if !errors.Is(err, io.EOF) {
			t.Errorf("pending Read after stop = %v; want io.EOF", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("stop did not end a pending Read")
	}
}

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}
