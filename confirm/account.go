package confirm

import (
	"os"
	"os/user"
	"runtime"
	"strconv"
)

// Account names the OS account this process runs as, found by its uid and
// never by an environment variable (USER, LOGNAME), which anyone can set:
// its login name, else "uid:N" for a uid without an entry in the user
// database. It is who answered at this process's terminal, and who
// approves, denies or reconciles with agentctl, so a policy's
// distinctApprover compares accounts the operating system vouches for.
func Account() string {
	if runtime.GOOS == "windows" {
		if u, err := user.Current(); err == nil && u.Username != "" {
			return u.Username
		}
		return "unknown"
	}
	uid := strconv.Itoa(os.Getuid())
	if u, err := user.LookupId(uid); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid:" + uid
}
