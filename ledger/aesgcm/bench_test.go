package aesgcm_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
)

// BenchmarkSealOpen is the cost encryption adds to one stored payload and
// its replay.
func BenchmarkSealOpen(b *testing.B) {
	ctx := context.Background()
	k := keyring(b, newKey(b))
	for _, size := range []int{1 << 10, 1 << 20} {
		plain := bytes.Repeat([]byte("x"), size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				s, err := k.Encode(ctx, rec, ledger.FieldResult, plain)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := k.Decode(ctx, rec, ledger.FieldResult, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
