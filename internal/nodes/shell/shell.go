package shell

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/proc"
	"github.com/skeinhq/skein/node"
)

// Stopping a command and waiting for its output, unless a Shell says
// otherwise.
const (
	// DefaultKillGrace is the time between SIGTERM and SIGKILL.
	DefaultKillGrace = 2 * time.Second
	// DefaultPipeWait is how long the stdout and stderr of a command that
	// has exited may stay idle — empty, nothing of them being written —
	// before Run closes them: processes it left behind hold them open.
	DefaultPipeWait = time.Second
)

// Shell runs the commands of shell nodes. The zero value is ready to use; a
// Shell holds no state between calls.
type Shell struct {
	// KillGrace is how long a command whose context ended has between
	// SIGTERM and SIGKILL to its process group. Zero means DefaultKillGrace.
	KillGrace time.Duration
	// PipeWait is how long stdout and stderr may stay idle once the
	// command has exited; then they are closed, what was written to them
	// read. Zero means DefaultPipeWait.
	PipeWait time.Duration
}

// Interface guard.
var _ node.Kind = (*Shell)(nil)

// Run runs the command of one attempt and waits for it. Its output is
// {stdout, stderr, exit_code, truncated: {stdout, stderr}}, with json when
// stdout is one JSON value and, when that value is an object, its "_" keys
// (directives) at the top.
//
// A templated argv element that would be read as an option (see
// allow_option_args) fails the node with code option_argument, permanently,
// before the command starts.
//
// A command that exits non-zero fails with code exit_code unless
// allow_failure is set. A command that cannot be found fails with code
// command_not_found, permanently. When ctx ends first, the command's process
// group is stopped and Run fails with category timeout or cancelled.
// Messages name the program, never its arguments.
func (s *Shell) Run(ctx context.Context, call *node.Call) (map[string]any, error) {
	cfg, err := parseParams(call)
	if err != nil {
		return nil, err
	}
	if cfg.checkOptions {
		if err := checkOptions(call.NodeID, cfg.label, call.Written["command"], cfg.argv); err != nil {
			return nil, err
		}
	}
	if tape, ok := cassette.Service.Lookup(call.Services); ok {
		// Recorded, or answered by a replay without running anything.
		req := map[string]any{"argv": cfg.argv, "stdin": cfg.stdin, "cwd": call.Params["cwd"]}
		return cassette.Do(ctx, tape, cassette.KindShell, req, func(ctx context.Context) (map[string]any, error) {
			return s.run(ctx, call, cfg)
		})
	}
	return s.run(ctx, call, cfg)
}

// run runs the command of cfg.
func (s *Shell) run(ctx context.Context, call *node.Call, cfg *config) (map[string]any, error) {
	if ctx.Err() != nil {
		return nil, stopped(ctx, cfg, "")
	}
	path, err := proc.LookPath(cfg.argv[0], cfg.cwd, cfg.path)
	if err != nil {
		return nil, startError(cfg, err)
	}
	stdout := &capture{limit: cfg.maxOutput, keepEnd: true, blobs: call.Blobs}
	stderr := &capture{limit: cfg.maxOutput, keepEnd: true, blobs: call.Blobs}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, startError(cfg, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, startError(cfg, err)
	}
	pipeWait := orDefault(s.PipeWait, DefaultPipeWait)
	cmd := &exec.Cmd{
		Path: path, Args: cfg.argv, Env: cfg.env, Dir: cfg.cwd,
		Stdout: outW, Stderr: errW,
		WaitDelay: pipeWait, // for stdin
	}
	if cfg.stdin != nil {
		cmd.Stdin = strings.NewReader(*cfg.stdin)
	}
	tree, err := proc.Start(cmd)
	outW.Close() // the command holds them now
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, startError(cfg, err)
	}
	copies := []*pipeCopy{copyPipe(outR, stdout), copyPipe(errR, stderr)}
	if pgid := tree.Group(); pgid != 0 && call.ProcessStarted != nil {
		call.ProcessStarted(pgid)
	}
	interrupted, waitErr := s.wait(ctx, tree)
	drain(pipeWait, copies...)
	code := exitCode(cmd.ProcessState)
	var exitErr *exec.ExitError
	waitFailed := waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay)
	outDropped, errDropped := stdout.droppedBytes(), stderr.droppedBytes()
	for _, st := range []struct {
		name    string
		dropped int
	}{{"stdout", outDropped}, {"stderr", errDropped}} {
		if st.dropped > 0 {
			call.Emit("output_truncated", map[string]any{"stream": st.name, "limit": cfg.maxOutput, "dropped_bytes": st.dropped})
		}
	}
	if interrupted || waitFailed || (code != 0 && !cfg.allowFailure) {
		// The output is not kept: drop what went to blobs.
		stdout.abort()
		stderr.abort()
	}
	if interrupted {
		return nil, stopped(ctx, cfg, stderr.tail())
	}
	if waitFailed {
		return nil, node.Failf(node.CategoryExecution, "wait", "waiting for %s: %v", cfg.label, waitErr)
	}
	if code != 0 && !cfg.allowFailure {
		e := node.Failf(node.CategoryExecution, "exit_code", "%s exited with status %d", cfg.label, code)
		// Both ends: many tools say what went wrong on stdout.
		e.Details = map[string]any{"exit_code": code, "stderr": stderr.tail(), "stdout": stdout.tail()}
		return nil, e
	}

	outText, err := stdout.kept()
	if err != nil {
		stderr.abort()
		return nil, node.Failf(node.CategoryInternal, "output", "keeping the output of %s: %v", cfg.label, err)
	}
	errText, err := stderr.kept()
	if err != nil {
		return nil, node.Failf(node.CategoryInternal, "output", "keeping the output of %s: %v", cfg.label, err)
	}
	out := map[string]any{
		"stdout":    outText,
		"stderr":    errText,
		"exit_code": code,
		"truncated": map[string]any{"stdout": outDropped > 0, "stderr": errDropped > 0},
	}
	if outDropped == 0 { // a cut JSON text is not JSON
		if v, ok := parseJSON(outText); ok {
			// json follows the extraction rule: an object's keys; a list's
			// items, found, count and first element's fields; a scalar's
			// value. Directives (_route, …) move to the top of the result,
			// where the engine takes them from.
			clean, directives := expr.SplitDirectives(expr.Normalize(v))
			out["json"] = clean
			if _, isObject := v.(map[string]any); isObject {
				for k, x := range directives {
					out[k] = x
				}
			}
		}
	}
	return out, nil
}

// wait waits for the command to finish. When ctx ends first it stops the
// command's process group (SIGTERM, then SIGKILL after the grace), reaps it
// and reports interrupted. It returns only once the goroutine it starts is
// done.
func (s *Shell) wait(ctx context.Context, tree *proc.Tree) (interrupted bool, err error) {
	done := make(chan error, 1)
	go func() { done <- tree.Wait() }()
	select {
	case err := <-done:
		return false, err
	case <-ctx.Done():
	}
	tree.Signal(syscall.SIGTERM)
	grace := time.NewTimer(orDefault(s.KillGrace, DefaultKillGrace))
	defer grace.Stop()
	select {
	case err = <-done:
		// The leader is gone; whatever it left in its group goes too.
		tree.Signal(syscall.SIGKILL)
	case <-grace.C:
		tree.Signal(syscall.SIGKILL)
		// Bounded: the leader dies of SIGKILL; stdout and stderr,
		// which processes that left the group may still hold, are
		// the drain's.
		err = <-done
	}
	tree.Await(200 * time.Millisecond)
	return true, err
}

// stopped is the error of a command whose context ended: category timeout
// for a deadline, cancelled otherwise.
func stopped(ctx context.Context, cfg *config, stderrTail string) *node.Error {
	e := &node.Error{Err: ctx.Err()}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		e.Code, e.Category = "timeout", node.CategoryTimeout
		e.Message = cfg.label + " timed out; it was stopped with the processes it started"
	} else {
		e.Code, e.Category = "cancelled", node.CategoryCancelled
		e.Message = cfg.label + " was cancelled; it was stopped with the processes it started"
	}
	if stderrTail != "" {
		e.Details = map[string]any{"stderr": stderrTail}
	}
	return e
}

// startError explains why the command did not start. A missing or
// unusable program is permanent: another attempt would fail the same way.
func startError(cfg *config, err error) *node.Error {
	var e *node.Error
	switch {
	case errors.Is(err, proc.ErrNotFound):
		e = node.Failf(node.CategoryExecution, "command_not_found", "%s not found in PATH", cfg.label)
	case errors.Is(err, fs.ErrNotExist):
		e = node.Failf(node.CategoryExecution, "command_not_found", "%s not found: %v", cfg.label, unwrapPath(err))
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EISDIR):
		e = node.Failf(node.CategoryExecution, "command_not_executable", "%s cannot be run: %v", cfg.label, unwrapPath(err))
	default:
		return node.Failf(node.CategoryExecution, "start", "starting %s: %v", cfg.label, unwrapPath(err))
	}
	e.Err = err
	e.Permanent = true
	return e
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// parseJSON parses a command's stdout, in memory or in a blob.
func parseJSON(text any) (any, bool) {
	switch t := text.(type) {
	case string:
		return node.ParseJSON([]byte(t))
	case interface{ Open() (io.ReadCloser, error) }:
		f, err := t.Open()
		if err != nil {
			return nil, false
		}
		defer f.Close()
		return node.ParseJSONReader(bufio.NewReaderSize(f, 64<<10))
	}
	return nil, false
}
