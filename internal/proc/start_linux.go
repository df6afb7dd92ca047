package proc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// self is the program that runs a supervisor: this one, re-executed.
const self = "/proc/self/exe"

// supervisorVar, set to "1" in a process's environment, makes this package
// run the process as a supervisor (see supervise) when it initialises,
// before the program's main, in Skein and in any test binary that links it.
const supervisorVar = "SKEIN_PROC_SUPERVISOR"

// canSupervise reports whether this process can re-execute itself: /proc
// is mounted.
var canSupervise = sync.OnceValue(func() bool {
	_, err := os.Stat(self)
	return err == nil
})

// Start starts cmd under the proc rules and returns its tree.
//
// On Linux the command runs under a supervisor: this program, re-executed
// (cmd.Process is the supervisor). The supervisor starts the command
// (cmd.Path, cmd.Args, its environment; in cmd.Dir with cmd's standard
// streams) in a process group of its own, becomes the reaper of every
// process the command leaves orphaned, and exits as the command did: with
// its exit status, or of the signal that killed it. Before it exits it
// kills what the command left running: the command's group, and what
// escaped it (a daemon that made a session of its own is still its
// descendant). It watches a socket whose other end only Skein holds: when
// Skein dies, even of SIGKILL, the socket ends, and the supervisor kills
// the whole tree — grandchildren included — before it exits. A signal sent
// to the supervisor alone is passed on to the command's group.
//
// Where /proc is not mounted the command is started directly, as on other
// systems: it leads its group and gets SIGKILL when Skein dies, but what it
// started does not.
//
// cmd.ExtraFiles must be empty. A command that cannot be executed fails
// Start with the error exec.Cmd.Start gives for it.
func Start(cmd *exec.Cmd) (*Tree, error) {
	if len(cmd.ExtraFiles) > 0 {
		return nil, errors.New("proc.Start: ExtraFiles are not passed on")
	}
	if !canSupervise() {
		apply(cmd)
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return &Tree{cmd: cmd, pid: cmd.Process.Pid}, nil
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("starting %s: a socket for its supervisor: %w", cmd.Path, err)
	}
	ours := os.NewFile(uintptr(fds[0]), "supervisor control")
	theirs := os.NewFile(uintptr(fds[1]), "supervisor control")
	want := spec{path: cmd.Path, args: cmd.Args, env: cmd.Environ()}
	env0 := cmd.Env

	env := []string{supervisorVar + "=1"}
	if d, ok := os.LookupEnv("GOCOVERDIR"); ok { // a binary built with -cover
		env = append(env, "GOCOVERDIR="+d)
	}
	cmd.Path, cmd.Args, cmd.Env = self, []string{"skein-supervisor", want.path}, env
	cmd.ExtraFiles = []*os.File{theirs} // fd 3
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Its own group, so that a terminal's Ctrl-C for Skein's group does
	// not reach it; no death signal: it must outlive Skein to kill the tree.
	cmd.SysProcAttr.Setpgid = true
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		ours.Close()
		cmd.Path, cmd.Args, cmd.Env, cmd.ExtraFiles = want.path, want.args, env0, nil
		return nil, err
	}
	pid, err := handshake(ours, want)
	if err != nil {
		ours.Close()
		_ = cmd.Process.Kill() // it waits for its command: none was started
		_ = cmd.Wait()
		return nil, err
	}
	return &Tree{cmd: cmd, pid: pid, ctl: ours}, nil
}

// handshake sends the supervisor the command and reads back its pid, or
// why it could not be executed.
func handshake(ctl *os.File, want spec) (int, error) {
	if _, err := ctl.Write(want.encode()); err != nil {
		return 0, fmt.Errorf("starting %s: its supervisor: %w", want.path, err)
	}
	var reply [8]byte
	if _, err := io.ReadFull(ctl, reply[:]); err != nil {
		return 0, fmt.Errorf("starting %s: its supervisor ended before it did: %w", want.path, err)
	}
	pid := int(int32(binary.LittleEndian.Uint32(reply[:4])))
	if errno := syscall.Errno(binary.LittleEndian.Uint32(reply[4:])); errno != 0 {
		return 0, &fs.PathError{Op: "fork/exec", Path: want.path, Err: errno}
	}
	return pid, nil
}

// spec is the command Skein asks its supervisor to start.
type spec struct {
	path string
	args []string
	env  []string
}

// encode writes s as a length, then strings each with its length: path,
// the number of args, args, env. Arguments and variables are bytes, not
// necessarily UTF-8, and are kept as they are.
func (s spec) encode() []byte {
	b := make([]byte, 4, 256)
	str := func(v string) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	str(s.path)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.args)))
	for _, a := range s.args {
		str(a)
	}
	for _, e := range s.env {
		str(e)
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// readSpec reads what encode wrote.
func readSpec(r io.Reader) (spec, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return spec{}, err
	}
	b := make([]byte, binary.LittleEndian.Uint32(n[:]))
	if _, err := io.ReadFull(r, b); err != nil {
		return spec{}, err
	}
	return decodeSpec(b)
}

var errSpec = errors.New("garbled command")

func decodeSpec(b []byte) (spec, error) {
	u32 := func() (uint32, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := binary.LittleEndian.Uint32(b)
		b = b[4:]
		return v, true
	}
	str := func() (string, bool) {
		n, ok := u32()
		if !ok || uint64(n) > uint64(len(b)) {
			return "", false
		}
		v := string(b[:n])
		b = b[n:]
		return v, true
	}
	var s spec
	var ok bool
	if s.path, ok = str(); !ok {
		return spec{}, errSpec
	}
	nargs, ok := u32()
	if !ok || uint64(nargs) > uint64(len(b)/4) {
		return spec{}, errSpec
	}
	s.args = make([]string, nargs)
	for i := range s.args {
		if s.args[i], ok = str(); !ok {
			return spec{}, errSpec
		}
	}
	for len(b) > 0 {
		e, ok := str()
		if !ok {
			return spec{}, errSpec
		}
		s.env = append(s.env, e)
	}
	return s, nil
}
