package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binaries are the programs the suite runs, built once per test binary
// run, without -race: the children are the system under test, not the
// test, and a race build of each would cost the suite its time budget.
type binaries struct {
	dir                       string
	agent, agentctl, payments string
}

var (
	buildOnce sync.Once
	built     binaries
	buildErr  error
)

// build compiles the agent, agentctl and payments into one temporary
// folder, removed by TestMain.
func build(t *testing.T) binaries {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcpledger-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		built = binaries{dir: dir,
			agent: filepath.Join(dir, "agent"), agentctl: filepath.Join(dir, "agentctl"), payments: filepath.Join(dir, "payments")}
		cmd := exec.Command(goTool(), "build", "-o", dir+string(filepath.Separator),
			"./e2e/agent", "./cmd/agentctl", "./examples/payments")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	// Not on PATH: the go command that runs these tests says where it is.
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		return filepath.Join(strings.TrimSpace(string(out)), "bin", "go")
	}
	return "go"
}

// proc is a child process the suite started, with its stderr kept.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *lineLog
	done chan struct{} // closed once the process was reaped
	err  error         // Wait's error, set before done closes
}

// start starts argv with env added to the suite's environment.
func start(t *testing.T, name string, env []string, argv ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(argv[0], argv[1:]...), log: newLineLog(), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p.log
	p.cmd.Stdout = p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to d for the process to end and returns Wait's error.
func (p *proc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		p.kill()
		<-p.done
		t.Fatalf("%s did not end within %v; output:\n%s", p.name, d, p.log)
		return nil
	}
}

// kill SIGKILLs the process and reaps it.
func (p *proc) kill() {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		panic(fmt.Sprintf("SIGKILL %s: %v", p.name, err))
	}
	<-p.done
}

// stop asks the process to end (SIGTERM) and waits for it, SIGKILLing it
// after a grace period.
func (p *proc) stop() {
	if p.exited() {
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.kill()
		return
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.kill()
	}
}

// killedBySignal reports whether the process ended by SIGKILL.
func (p *proc) killedBySignal() bool {
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// lineLog keeps a child's output and lets the suite wait for a line.
type lineLog struct {
	mu      sync.Mutex // guards buf and changed
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(b)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(b), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitLine waits up to d for a line containing s and returns it; ok is
// false when d passed or the writer's process ended (done closed) first.
func (l *lineLog) waitLine(s string, d time.Duration, done <-chan struct{}) (string, bool) {
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for {
		l.mu.Lock()
		text, changed := l.buf.String(), l.changed
		l.mu.Unlock()
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, s) {
				return line, true
			}
		}
		select {
		case <-changed:
		case <-done:
			done = nil // one more look at what was written before the end
			if l.String() == text {
				return "", false
			}
		case <-timeout.C:
			return "", false
		}
	}
}

// freePort returns a port on 127.0.0.1 that was free a moment ago. The
// suite keeps it for a server across restarts.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// descendant finds a live process below root whose executable is exe: the
// proxy or payments server a stdio parent started. 0 when there is none.
func descendant(root int, exe string) int {
	children := map[int][]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		f := strings.Fields(string(rest))
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], pid)
	}
	queue := append([]int(nil), children[root]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if path, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && path == exe {
			return pid
		}
		queue = append(queue, children[pid]...)
	}
	return 0
}
