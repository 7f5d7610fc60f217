package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one server process of a contender: the payments example or an
// agentctl proxy, run from a binary built for this run.
type proc struct {
	name string
	cmd  *exec.Cmd
	url  string // its streamable HTTP endpoint
	// pprof is its pprof server's base URL, when built with -tags pprof.
	pprof string
	log   string // its stderr, kept in the run folder
	done  chan error
}

// listening matches the line both binaries print once they serve HTTP,
// and pprofAt the one of a build with -tags pprof (internal/loadprofile).
var (
	listening = regexp.MustCompile(`listening on (http://\S+/)`)
	pprofAt   = regexp.MustCompile(`^pprof at (http://\S+/debug/pprof/)`)
)

// start runs bin with args and waits for its "listening on URL" line.
func start(ctx context.Context, name, dir string, env []string, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("loadbench: %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	pr, pw, err := os.Pipe()
	if err != nil {
		_ = logFile.Close() // empty yet; the error returned says why
		return nil, fmt.Errorf("loadbench: %s: %w", name, err)
	}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		// Nothing was written through them; the error returned says why.
		_ = logFile.Close()
		_ = pr.Close()
		_ = pw.Close()
		return nil, fmt.Errorf("loadbench: start %s (%s): %w", name, bin, err)
	}
	_ = pw.Close() // the child holds its own copy; ours only closes
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan error, 1)}
	found := make(chan string, 1)
	go func() {
		// Every line goes to the log; the first "listening on" line
		// gives the address. Reading on after it keeps the child from
		// blocking on a full pipe.
		// The log is for a person reading after a failure: a lost
		// line there changes no figure.
		defer func() { _ = logFile.Close() }()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = fmt.Fprintln(logFile, line)
			if m := pprofAt.FindStringSubmatch(line); m != nil && !sent {
				p.pprof = m[1] // read only after found is received
			}
			if m := listening.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(logFile, pr) // a line past the scanner's limit
	}()
	go func() { p.done <- cmd.Wait() }()
	timer := time.NewTimer(60 * time.Second)
	defer timer.Stop()
	select {
	case p.url = <-found:
		return p, nil
	case err := <-p.done:
		return nil, fmt.Errorf("loadbench: %s exited before it listened (%v); see %s", name, err, logPath)
	case <-timer.C:
		_ = p.stop() // the error returned says what went wrong
		return nil, fmt.Errorf("loadbench: %s did not listen within 60s; see %s", name, logPath)
	case <-ctx.Done():
		_ = p.stop() // interrupted: how it ended adds nothing
		return nil, ctx.Err()
	}
}

// stop asks the process to end (SIGTERM), and kills it when it has not
// within 15 s. It returns how the process exited: nil for a clean stop.
func (p *proc) stop() error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = p.cmd.Process.Kill() // already gone, or no SIGTERM on this OS
	}
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	select {
	case err := <-p.done:
		return err
	case <-timer.C:
		_ = p.cmd.Process.Kill() // it had its chance to stop cleanly
		return <-p.done
	}
}

// rss is the process's resident set size in bytes, from /proc.
func (p *proc) rss() (int64, error) {
	return rssOf(p.cmd.Process.Pid)
}

// fileRSS is the part of rss backed by files: the program's own pages,
// shared with the page cache and the same whatever the load.
func (p *proc) fileRSS() (int64, error) {
	return statusBytes(p.cmd.Process.Pid, "RssFile")
}

func rssOf(pid int) (int64, error) { return statusBytes(pid, "VmRSS") }

// statusBytes reads a "kB" field of /proc/PID/status.
func statusBytes(pid int, field string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("loadbench: /proc/%d/status %s %q: %w", pid, field, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("loadbench: no %s in /proc/%d/status", field, pid)
}

// cpuTime is the CPU time (user and system) process pid has used, from
// /proc/PID/stat; pid 0 is this process.
func cpuTime(pid int) (time.Duration, error) {
	name := "self"
	if pid != 0 {
		name = strconv.Itoa(pid)
	}
	raw, err := os.ReadFile("/proc/" + name + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted below start after its closing parenthesis.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, fmt.Errorf("loadbench: /proc/%s/stat: no command name", name)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("loadbench: /proc/%s/stat: %d fields", name, len(f))
	}
	// utime and stime, fields 14 and 15 of the whole line, in clock
	// ticks of 1/100 s (USER_HZ on Linux).
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("loadbench: /proc/%s/stat: %w", name, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// loadAverage is the one-minute load average, from /proc/loadavg (-1
// where there is none).
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
