package peer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkBare is go-sdk's in-memory CallTool with no protection, by one
// caller and by 64: the floor every contender's overhead is taken over.
func BenchmarkBare(b *testing.B) {
	call := bare(b)
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first_64way", func(b *testing.B) { parallel(b, call) })
}

// bare returns one unprotected call on a server and session of its own.
func bare(b *testing.B) func() error {
	_, cs := newServer(b)
	ctx := context.Background()
	var next atomic.Int64
	return func() error {
		id := fmt.Sprint(next.Add(1))
		res, err := cs.CallTool(ctx, write(id, 1))
		if err != nil {
			return err
		}
		return check(res, id)
	}
}
