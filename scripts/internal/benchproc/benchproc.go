// Package benchproc runs `skein` as a process for the benchmark programs
// under scripts/: it builds the binary when none is given, starts
// `skein serve` or `skein mcp --http` and waits until the server says where
// it listens, stops it, and reads a process's resident set and CPU time
// from /proc (Linux only).
package benchproc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skeinhq/skein/internal/skeinbin"
)

// Build returns bin when it is not empty; otherwise it builds Skein's
// command into dir/skein, static as make install builds it
// (skeinbin.Build), and returns that path.
func Build(bin, dir string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	bin = filepath.Join(dir, "skein")
	if err := skeinbin.Build(bin); err != nil {
		return "", err
	}
	return bin, nil
}

// Server is a started skein process that listens on a loopback address.
type Server struct {
	// URL is where it said it listens: the base URL of `skein serve`,
	// the endpoint of `skein mcp --http`.
	URL     string
	cmd     *exec.Cmd
	drained chan struct{} // closed when its stderr has ended
}

// Serve starts cmd, a `skein serve`, and returns once it has logged its
// "listening" line, taking the URL from it. Every line of its stderr goes
// to log (nil: nowhere) until the process ends. When the process exits
// first, or ctx ends first (the process is then killed), the error says
// why, with what it wrote to stderr.
func Serve(ctx context.Context, cmd *exec.Cmd, log io.Writer) (*Server, error) {
	return start(ctx, "skein serve", cmd, log, func(line []byte) (string, bool) {
		var l struct{ Msg, URL string }
		if json.Unmarshal(line, &l) == nil && l.Msg == "listening" && l.URL != "" {
			return l.URL, true
		}
		return "", false
	})
}

// MCP starts cmd, a `skein mcp --http`, and returns once it has printed
// "listening on URL"; as Serve otherwise.
func MCP(ctx context.Context, cmd *exec.Cmd, log io.Writer) (*Server, error) {
	return start(ctx, "skein mcp", cmd, log, func(line []byte) (string, bool) {
		_, url, ok := strings.Cut(string(line), "listening on ")
		return url, ok && url != ""
	})
}

// start starts cmd and reads its stderr until listening finds the URL in
// a line, then copies the rest to log in the background.
func start(ctx context.Context, what string, cmd *exec.Cmd, log io.Writer, listening func([]byte) (string, bool)) (*Server, error) {
	if log == nil {
		log = io.Discard
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{cmd: cmd, drained: make(chan struct{})}
	found := make(chan string, 1)
	var said bytes.Buffer // its lines before the URL, for the error
	go func() {
		defer close(s.drained)
		r := bufio.NewReader(stderr)
		for {
			line, err := r.ReadBytes('\n')
			_, _ = log.Write(line)
			if url, ok := listening(bytes.TrimSpace(line)); ok {
				found <- url
				break
			}
			said.Write(line)
			if err != nil {
				return
			}
		}
		_, _ = io.Copy(log, r)
	}()
	select {
	case s.URL = <-found:
		return s, nil
	case <-s.drained:
		select {
		case s.URL = <-found: // it listened, then its stderr ended
			return s, nil
		default:
		}
		err = cmd.Wait()
		return nil, fmt.Errorf("%s ended (%v) before it said where it listens:\n%s", what, err, said.Bytes())
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-s.drained
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s did not say where it listens: %w\n%s", what, context.Cause(ctx), said.Bytes())
	}
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop sends the server SIGTERM, waits until its stderr has ended (all of
// it is in the log) and the process has exited, and returns the error of
// its exit: nil when it ended with status 0.
func (s *Server) Stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.drained
	return s.cmd.Wait()
}

// RSS is the resident set of process pid and its peak (VmRSS and VmHWM),
// in bytes.
func RSS(pid int) (now, peak int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseStatus(data)
}

// parseStatus reads VmRSS and VmHWM from the text of /proc/PID/status.
func parseStatus(data []byte) (now, peak int64, err error) {
	var seen int
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "VmRSS:" && f[0] != "VmHWM:") {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s %w", f[0], err)
		}
		if f[0] == "VmRSS:" {
			now = kb << 10
		} else {
			peak = kb << 10
		}
		seen++
	}
	if seen < 2 {
		return 0, 0, errors.New("no VmRSS and VmHWM in /proc/PID/status")
	}
	return now, peak, nil
}

// CPU is the CPU time, user and system, process pid has used, to the
// clock tick (10 ms).
func CPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(data)
}

// parseStat reads utime and stime from the text of /proc/PID/stat.
func parseStat(data []byte) (time.Duration, error) {
	// The fields after the command name, which is in parentheses and may
	// hold spaces and parentheses itself.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("no command name in /proc/PID/stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("too few fields in /proc/PID/stat")
	}
	utime, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / 100, nil // clock ticks: USER_HZ is 100 on Linux
}
