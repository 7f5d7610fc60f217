package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Server is a private PostgreSQL server that one test owns: it may stop and
// restart it without disturbing the tests of other packages, which share
// the server behind MCPLEDGER_TEST_POSTGRES.
type Server struct {
	// URL connects as the superuser "postgres" to the database "postgres".
	URL string

	bin  string // directory of initdb, pg_ctl, postgres
	dir  string // owned by the server's user
	data string
	as   []string // runuser prefix when the test runs as root
}

// StartServer initializes and starts a private server on a free port of
// 127.0.0.1, and stops and removes it when t ends. It needs the PostgreSQL
// server binaries and either a non-root user or root (it then runs the
// server as "postgres"). When those are missing the test is skipped, or
// fails under CI=true.
func StartServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	var err error
	if s.bin, err = serverBin(); err != nil {
		unavailable(t, err.Error())
	}
	owner := -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			unavailable(t, "running as root, and PostgreSQL refuses root: no user \"postgres\" to run it as")
		}
		if owner, err = strconv.Atoi(u.Uid); err != nil {
			t.Fatalf("pgtest: uid of postgres: %v", err)
		}
		s.as = []string{"runuser", "-u", "postgres", "--"}
	}
	// Not t.TempDir: its parent is private to this user and the server's
	// user must be able to reach the data directory.
	if s.dir, err = os.MkdirTemp("", "mcpledger-pg-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(s.dir); err != nil {
			t.Logf("pgtest: remove the private server's folder: %v; delete %s by hand", err, s.dir)
		}
	})
	if owner >= 0 {
		if err := os.Chown(s.dir, owner, -1); err != nil {
			t.Fatal(err)
		}
	}
	s.data = filepath.Join(s.dir, "data")
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.run("initdb", "-D", s.data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		t.Fatal(err)
	}
	// In postgresql.conf rather than on pg_ctl's command line, so that every
	// later start and restart uses them too.
	conf := fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = ''\nmax_connections = 100\n", port)
	f, err := os.OpenFile(filepath.Join(s.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(conf); err != nil {
		_ = f.Close() // the write's error is the one to report
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.ctl("start"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.ctl("stop", "-m", "immediate"); err != nil {
			t.Errorf("pgtest: stop private server: %v", err)
		}
	})
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return s
}

// Restart stops the server with a fast shutdown (clients are disconnected,
// committed work is kept) and starts it again; pg_ctl returns once it
// accepts connections. It returns an error rather than failing a test so
// that a test may restart the server from any goroutine.
func (s *Server) Restart() error {
	return s.ctl("restart", "-m", "fast")
}

// Stop stops the server with a fast shutdown.
func (s *Server) Stop() error { return s.ctl("stop", "-m", "fast") }

// Crash stops the server with an immediate shutdown: every backend ends
// at once and nothing is flushed, as when the machine loses power or the
// server is killed.
func (s *Server) Crash() error { return s.ctl("stop", "-m", "immediate") }

// Start starts a stopped server.
func (s *Server) Start() error { return s.ctl("start") }

func (s *Server) ctl(args ...string) error {
	// -l on every call: a server started without it keeps pg_ctl's output
	// pipe open, and waiting for that output would never end.
	return s.run("pg_ctl", append([]string{"-D", s.data, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60"}, args...)...)
}

func (s *Server) run(prog string, args ...string) error {
	argv := append(append(append([]string{}, s.as...), filepath.Join(s.bin, prog)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	log, lerr := os.ReadFile(filepath.Join(s.dir, "log"))
	if lerr != nil {
		log = []byte(lerr.Error())
	}
	return fmt.Errorf("pgtest: %s: %w\n%s\nserver log:\n%s", strings.Join(argv, " "), err, out, log)
}

// serverBin finds the newest installed server's binaries.
func serverBin() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	dirs, err := filepath.Glob("/usr/lib/postgresql/*/bin")
	if err != nil {
		return "", err
	}
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) < version(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL server binaries (pg_ctl, initdb) found; install the postgresql package")
}

// version is the major version in /usr/lib/postgresql/<version>/bin, or 0.
func version(binDir string) int {
	v, err := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	if err != nil {
		return 0
	}
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }() // closing it is what frees the port
	return l.Addr().(*net.TCPAddr).Port, nil
}

// unavailable skips t, or fails it under CI=true, because a private server
// cannot be started here.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("pgtest: cannot start a private PostgreSQL server under CI=true: %s", why)
	}
	t.Skipf("pgtest: skipping: cannot start a private PostgreSQL server: %s", why)
}
