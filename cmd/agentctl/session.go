package main

import (
	"os"
	"strconv"
	"strings"
)

// defaultSession names the session of a call when neither --session nor
// MCPLEDGER_SESSION does. A re-run of the same command in the same shell must
// be recognised as a re-plan, so the session is the shell's: the terminal
// session id (getsid), qualified by the session leader's start time so a
// recycled pid is another session. Every command typed into one terminal
// window, including through `go run` or a script, shares it; another window
// is another session.
func (a *app) defaultSession() string {
	if s := a.getenv("MCPLEDGER_SESSION"); s != "" {
		return s
	}
	return shellSession()
}

// processStart returns the start time of pid in clock ticks since boot from
// /proc (Linux), or "" elsewhere.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis. Start time is field 22.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	const startField = 22 - 3 // fields[0] is field 3
	if len(fields) <= startField {
		return ""
	}
	return fields[startField]
}
