//go:build !unix

package terminal

import (
	"io"
	"os"
	"sync/atomic"
)

// ttyInput reads f directly: without poll(2) a pending read cannot be
// interrupted, so stop only makes later reads return io.EOF and close does
// not wait for a read in flight.
type ttyInput struct {
	f       *os.File
	stopped atomic.Bool
}

func newTTYInput(f *os.File) (*ttyInput, error) { return &ttyInput{f: f}, nil }

func (in *ttyInput) Read(p []byte) (int, error) {
	if in.stopped.Load() {
		return 0, io.EOF
	}
	return in.f.Read(p)
}

func (in *ttyInput) stop() { in.stopped.Store(true) }

func (in *ttyInput) close() { in.stop() }
