package proxy

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

func TestLineGuardDropsLongLines(t *testing.T) {
	var out strings.Builder
	long := `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("x", 200) + `"}}`
	in := "\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\r\n" + long + "\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	g := &lineGuard{r: bufio.NewReaderSize(strings.NewReader(in), 16), out: &guardedOut{w: &out}, max: 64}
	passed, err := io.ReadAll(g)
	if err != nil {
		t.Fatalf("ReadAll = %v", err)
	}
	want := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n"
	if string(passed) != want {
		t.Errorf("passed on %q; want %q", passed, want)
	}
	if got := out.String(); !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, "over 64 bytes") || strings.Count(got, "\n") != 1 {
		t.Errorf("answered %q; want one -32600 line about the size", got)
	}
}
