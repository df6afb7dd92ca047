package mcp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/proc"
	"github.com/skeinhq/skein/workflow"
)

// pipeWait bounds the wait for a dead server's stderr to close when
// processes it left behind hold it open.
const pipeWait = time.Second

// process is a running stdio server.
type process struct {
	cmd    *exec.Cmd
	tree   *proc.Tree
	stderr *tail
	exited chan struct{} // closed once the process is reaped
	state  *os.ProcessState
}

// done reports whether the process has exited.
func (p *process) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// exitedWithin waits up to d for the process to exit.
func (p *process) exitedWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// status describes how the process ended: "exit status 3", "killed by
// signal 9".
func (p *process) status() string {
	if !p.done() || p.state == nil {
		return "still running"
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("killed by signal %d", ws.Signal())
	}
	return fmt.Sprintf("exit status %d", p.state.ExitCode())
}

// stop waits up to grace for the process to exit on its own (its stdin is
// closed), then kills its process group and waits for it. It kills the
// group even after a clean exit, so nothing the server started survives it.
func (p *process) stop(grace time.Duration) {
	p.exitedWithin(grace)
	p.tree.Signal(syscall.SIGKILL)
	<-p.exited // bounded: SIGKILL cannot be ignored, and WaitDelay closes stray pipes
}

// stdioCommand is a stdio server's command with its templates rendered.
type stdioCommand struct {
	path string // the program's absolute path, found with the child's PATH
	args []string
	env  []string
	dir  string
}

// prepareStdio renders a server's args and env in scope and finds its
// program with the child's PATH. It spawns nothing.
func prepareStdio(s *workflow.MCPServer, scope *expr.Scope) (*stdioCommand, error) {
	args := make([]string, len(s.Args))
	for i, a := range s.Args {
		v, err := renderString(a, scope)
		if err != nil {
			return nil, startError(s.Name, "template", true, "", "args[%d]: %v", i, err)
		}
		args[i] = v
	}
	vars := proc.Base()
	for k, raw := range s.Env {
		v, err := renderString(raw, scope)
		if err != nil {
			return nil, startError(s.Name, "template", true, "", "env %s: %v", k, err)
		}
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	path, err := proc.LookPath(s.Command, s.Cwd, vars["PATH"])
	if err == nil && strings.Contains(path, "/") && !filepath.IsAbs(path) {
		// The allowlist compares absolute paths.
		path, err = filepath.Abs(filepath.Join(s.Cwd, path))
	}
	if err != nil {
		switch {
		case errors.Is(err, proc.ErrNotFound), errors.Is(err, fs.ErrNotExist):
			return nil, startError(s.Name, "command_not_found", true, "", "command %q not found (%v)", s.Command, err)
		default:
			return nil, startError(s.Name, "command_not_executable", true, "", "command %q cannot be run: %v", s.Command, err)
		}
	}
	return &stdioCommand{path: path, args: args, env: env, dir: s.Cwd}, nil
}

// spawn starts the server and returns the ends of its stdout and stdin
// that Skein reads and writes. The process leads its own group and, on
// Linux, dies with Skein, with every process it started (proc.Start); its
// stderr goes to a tail.
func (c *stdioCommand) spawn(name string) (p *process, stdout, stdin *os.File, err error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, startError(name, "start", false, "", "creating pipes: %v", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, nil, startError(name, "start", false, "", "creating pipes: %v", err)
	}
	p = &process{stderr: &tail{}, exited: make(chan struct{})}
	p.cmd = &exec.Cmd{
		Path: c.path, Args: append([]string{c.path}, c.args...), Env: c.env, Dir: c.dir,
		Stdin: inR, Stdout: outW, Stderr: p.stderr, WaitDelay: pipeWait,
	}
	p.tree, err = proc.Start(p.cmd)
	inR.Close() // the child has its own copies
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, nil, nil, startError(name, "start", true, "", "starting %s: %v", c.path, err)
	}
	go func() {
		_ = p.tree.Wait()
		p.state = p.cmd.ProcessState
		close(p.exited)
	}()
	return p, outR, inW, nil
}

// renderString renders one template to text.
func renderString(s string, scope *expr.Scope) (string, error) {
	v, err := expr.RenderValue(s, scope)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case nil:
		return "", nil
	}
	return fmt.Sprint(v), nil
}

// connectStdio spawns a stdio server and runs the MCP handshake with it.
// On failure nothing is left running.
func connectStdio(ctx context.Context, client *sdk.Client, s *workflow.MCPServer, cmd *stdioCommand) (*sdk.ClientSession, *process, error) {
	p, stdout, stdin, err := cmd.spawn(s.Name)
	if err != nil {
		return nil, nil, err
	}
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err == nil {
		return cs, p, nil
	}
	// Give a server that failed at once a moment to be reaped, so the
	// message can say how it ended.
	if ctx.Err() == nil {
		p.exitedWithin(500 * time.Millisecond)
	}
	stdout.Close() // the SDK may have closed them already
	stdin.Close()
	exited := p.done()
	p.stop(0)
	switch {
	case exited:
		return nil, nil, startError(s.Name, "exited", false, p.stderr.String(), "%s exited during the MCP handshake (%s)", s.Command, p.status())
	case ctx.Err() != nil:
		return nil, nil, startError(s.Name, "handshake_timeout", false, p.stderr.String(), "%s did not complete the MCP handshake: %v", s.Command, context.Cause(ctx))
	}
	return nil, nil, startError(s.Name, "handshake", false, p.stderr.String(), "MCP handshake with %s failed: %v", s.Command, err)
}
