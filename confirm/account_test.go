package confirm_test

import (
	"os"
	"os/user"
	"runtime"
	"strconv"
	"testing"

	"github.com/mcpledger/mcpledger/confirm"
)

// Account is the account of this process's uid, whatever USER says.
func TestAccountIgnoresUSER(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows names the account through user.Current")
	}
	t.Setenv("USER", "someone-else")
	t.Setenv("LOGNAME", "someone-else")
	want := "uid:" + strconv.Itoa(os.Getuid())
	if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil && u.Username != "" {
		want = u.Username
	}
	if got := confirm.Account(); got != want || got == "someone-else" {
		t.Errorf("Account() = %q; want %q (the uid's account)", got, want)
	}
}
