//go:build unix

package terminal

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// ttyInput is how a prompt reads a terminal (or any file): the form gets a
// ttyInput, never the *os.File, so that reading ends when the prompt says
// so and not when the form's library gets round to it.
//
// bubbletea v2 stops its input reader without waiting for it: the goroutine
// that reads outlives Program.Run. Handed an *os.File, that goroutine polls
// the file through Fd() while the prompt closes it (a data race on the
// descriptor) and, if it wakes on a key, takes the key from the next form.
// Handed a plain reader it cannot cancel, so its read stays in Read until
// close ends it: close wakes the pending poll, which then returns io.EOF
// without taking a byte, and close returns only once no read is in flight.
// Only then is the terminal closed or handed to the next form.
type ttyInput struct {
	rc     syscall.RawConn // the file's; Control keeps its descriptor open while a read polls it
	wakeR  *os.File        // a byte on wakeW ends a pending poll
	wakeW  *os.File
	wakeFD int // wakeR's descriptor, open until close

	stopped  atomic.Bool
	stopOnce sync.Once

	mu     sync.Mutex // held by the read in flight; close takes it to wait for that read
	closed bool       // guarded by mu
}

// newTTYInput reads f through a poll that close can interrupt.
func newTTYInput(f *os.File) (*ttyInput, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fd := -1
	if err := fdOf(r, &fd); err != nil {
		return nil, errors.Join(err, r.Close(), w.Close())
	}
	return &ttyInput{rc: rc, wakeR: r, wakeW: w, wakeFD: fd}, nil
}

// fdOf stores f's descriptor in fd without Fd, which would put f into
// blocking mode.
func fdOf(f *os.File, fd *int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(d uintptr) { *fd = int(d) })
}

// Read waits until the file has input or the input is stopped; stopped, it
// returns io.EOF and has taken nothing.
func (in *ttyInput) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for {
		if in.closed || in.stopped.Load() {
			return 0, io.EOF
		}
		var n int
		var err error
		again := false
		if cerr := in.rc.Control(func(fd uintptr) { n, again, err = in.readFD(int(fd), p) }); cerr != nil {
			return 0, cerr
		}
		if !again {
			return n, err
		}
	}
}

// readFD polls fd and the wake pipe, then reads fd if it has input. again
// reports a poll or read to retry (a signal, or a non-blocking descriptor
// with nothing after all).
func (in *ttyInput) readFD(fd int, p []byte) (n int, again bool, err error) {
	fds := []unix.PollFd{
		{Fd: int32(fd), Events: unix.POLLIN},
		{Fd: int32(in.wakeFD), Events: unix.POLLIN},
	}
	if _, err := unix.Poll(fds, -1); err != nil {
		if errors.Is(err, unix.EINTR) {
			return 0, true, nil
		}
		return 0, false, os.NewSyscallError("poll", err)
	}
	if fds[1].Revents != 0 {
		return 0, false, io.EOF
	}
	n, err = unix.Read(fd, p)
	switch {
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
		return 0, true, nil
	case errors.Is(err, unix.EIO):
		// The terminal hung up.
		return 0, false, io.EOF
	case err != nil:
		return 0, false, os.NewSyscallError("read", err)
	case n == 0:
		return 0, false, io.EOF
	}
	return n, false, nil
}

// stop ends a pending read and makes later reads return io.EOF; it does not
// wait (a context's AfterFunc calls it while the read may be in flight).
func (in *ttyInput) stop() {
	in.stopOnce.Do(func() {
		in.stopped.Store(true)
		// The pipe is empty and open until close, which calls stop first:
		// one byte cannot fail to go in.
		_, _ = in.wakeW.Write([]byte{1})
	})
}

// close stops the input and returns once no read is in flight; the file is
// then the caller's again (to close, or to read with another form).
func (in *ttyInput) close() {
	in.stop()
	in.mu.Lock() // the read in flight has returned
	defer in.mu.Unlock()
	if in.closed {
		return
	}
	in.closed = true
	_ = in.wakeR.Close() // a pipe only this ttyInput used; nothing to do if it failed
	_ = in.wakeW.Close()
}
