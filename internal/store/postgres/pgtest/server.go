package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a Postgres server of a test's own: a cluster made with initdb
// in a temporary folder, listening on a free loopback port with trust
// authentication, that the test may stop, start and restart while its
// clients run (a database that restarts mid-run). It is stopped and
// removed when the test ends.
//
// It needs the server's binaries (initdb, pg_ctl: Debian's
// /usr/lib/postgresql/<version>/bin, or pg_config --bindir on $PATH). As
// root it runs them as the postgres user. Without them the test is
// skipped, unless CI=true: then it fails, so CI never passes by skipping.
type Server struct {
	bin, dir string
	port     int
	asUser   string
}

// NewServer makes and starts a Postgres server for t.
func NewServer(t testing.TB) *Server {
	t.Helper()
	bin, err := serverBin()
	if err != nil {
		msg := fmt.Sprintf("no Postgres server binaries (%v): install the postgresql package (initdb and pg_ctl), "+
			"or put pg_config of an installation on $PATH", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s := &Server{bin: bin}
	dir, err := os.MkdirTemp("", "skein-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	t.Cleanup(func() {
		_ = s.ctl("stop", "-m", "immediate", "-w")
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		// Postgres refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running Postgres as root needs a postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.asUser = "postgres"
	}
	s.port = freePort(t)
	data := filepath.Join(dir, "data")
	if out, err := s.command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
		"--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	conf := fmt.Sprintf("\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\n"+
		"fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n", s.port, dir)
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatalf("configuring the test server: %v", err)
	}
	s.Start(t)
	return s
}

// URL is the URL of the server's postgres database.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Start starts the server and waits until it takes connections.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.ctl("start", "-w", "-t", "60", "-l", filepath.Join(s.dir, "server.log")); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		t.Fatalf("starting the test's Postgres: %v\n%s", err, log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.URL())
		if err == nil {
			_ = conn.Close(ctx)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the test's Postgres takes no connection: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops the server, closing its clients' connections (fast
// shutdown: what a restart of the database does to them).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.ctl("stop", "-m", "fast", "-w", "-t", "60"); err != nil {
		t.Fatalf("stopping the test's Postgres: %v", err)
	}
}

// Restart stops and starts the server.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop(t)
	s.Start(t)
}

func (s *Server) ctl(args ...string) error {
	args = append([]string{"-D", filepath.Join(s.dir, "data")}, args...)
	out, err := s.command(filepath.Join(s.bin, "pg_ctl"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %v: %w\n%s", args, err, out)
	}
	return nil
}

// command runs a server binary, as the postgres user when this is root,
// in the server's folder (the postgres user may not enter the test's).
func (s *Server) command(name string, args ...string) *osexec.Cmd {
	cmd := osexec.Command(name, args...)
	if s.asUser != "" {
		cmd = osexec.Command("runuser", append([]string{"-u", s.asUser, "--", name}, args...)...)
	}
	cmd.Dir = s.dir
	return cmd
}

// serverBin finds the folder of initdb and pg_ctl.
func serverBin() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(found, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(found[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(found[j]))))
		return vi > vj
	})
	if len(found) > 0 {
		return filepath.Dir(found[0]), nil
	}
	if out, err := osexec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	if p, err := osexec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("initdb is not in /usr/lib/postgresql/*/bin nor on $PATH")
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}
