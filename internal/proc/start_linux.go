package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// self is the program that runs the guardian: this one, re-executed.
const self = "/proc/self/exe"

// guardianVar, set to "1" in a process's environment, makes this package
// run the process as a guardian (see guard) when it initialises, before the
// program's main, in Skein and in any test binary that links it.
const guardianVar = "SKEIN_PROC_GUARDIAN"

// canGuard reports whether this process can re-execute itself: /proc is
// mounted.
var canGuard = sync.OnceValue(func() bool {
	_, err := os.Stat(self)
	return err == nil
})

// guardian is Skein's end of the socket its guardian watches, started by
// the first Start. Every command's group is registered on it ("+pgid\n")
// while the command runs, and unregistered ("-pgid\n") once it ended.
// groups is what is registered, to hand to a new guardian when the one
// before is gone (killed by someone).
var guardian struct {
	mu     sync.Mutex
	ctl    *os.File
	groups map[int]bool
	// starting are the tags of the commands being started ("?tag" while a
	// command may run before its group is registered, "!tag" once it is).
	starting map[string]bool
}

// startingVar tags, in its environment, a command Start is starting (and
// what it starts): should Skein die after the command started but before
// its group was registered, the guardian finds the command's group by the
// tag (killStarting).
const startingVar = "SKEIN_PROC_STARTING"

// starts numbers the commands Start starts, for their tags.
var starts atomic.Uint64

// afterStart, when set (tests), is called between a command's start and
// the registration of its group.
var afterStart func(pid int)

// startGuardian starts a guardian, with guardian.mu held: this program
// re-executed, with the other end of a socket only Skein holds. When
// Skein dies, even of SIGKILL, the socket ends, and the guardian kills
// every group still registered, then exits. The groups registered with a
// guardian that is gone are registered with the new one.
func startGuardian() error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("a socket for the guardian: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "guardian control")
	theirs := os.NewFile(uintptr(fds[1]), "guardian control")
	defer theirs.Close()
	env := []string{guardianVar + "=1"}
	if d, ok := os.LookupEnv("GOCOVERDIR"); ok { // a binary built with -cover
		env = append(env, "GOCOVERDIR="+d)
	}
	g := &exec.Cmd{
		Path: self, Args: []string{"skein-guardian"}, Env: env,
		ExtraFiles: []*os.File{theirs}, // fd 3
		// Its own group, so that a terminal's Ctrl-C for Skein's group
		// does not reach it; no death signal: it must outlive Skein.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := g.Start(); err != nil {
		ours.Close()
		return fmt.Errorf("the guardian: %w", err)
	}
	// Never waited for: it ends after Skein (a guardian killed before
	// stays a zombie until Skein exits).
	guardianPID = g.Process.Pid
	_ = g.Process.Release()
	var lines []byte
	for pgid := range guardian.groups {
		lines = append(strconv.AppendInt(append(lines, '+'), int64(pgid), 10), '\n')
	}
	for tag := range guardian.starting {
		lines = append(append(append(lines, '?'), tag...), '\n')
	}
	if len(lines) > 0 {
		if _, err := ours.Write(lines); err != nil {
			ours.Close()
			return fmt.Errorf("the guardian: %w", err)
		}
	}
	guardian.ctl = ours
	return nil
}

// ensureGuardian starts a guardian when there is none.
func ensureGuardian() error {
	guardian.mu.Lock()
	defer guardian.mu.Unlock()
	if guardian.ctl != nil {
		return nil
	}
	return startGuardian()
}

// guardianPID is the process id of the last guardian started (tests).
var guardianPID int

// tell registers ('+') or unregisters ('-') a group with the guardian,
// starting one when there is none or the one before is gone. Once
// written, the line is the guardian's even if Skein dies at once: it
// reads all before the end.
func tell(op byte, pgid int) error {
	return say(op, strconv.Itoa(pgid))
}

// say tells the guardian a line: op and what it is about, a group ('+',
// '-') or the tag of a command being started ('?', '!'); it starts a
// guardian when there is none or the one before is gone.
func say(op byte, what string) error {
	guardian.mu.Lock()
	defer guardian.mu.Unlock()
	if guardian.groups == nil {
		guardian.groups = map[int]bool{}
		guardian.starting = map[string]bool{}
	}
	switch op {
	case '+', '-':
		pgid, _ := strconv.Atoi(what)
		if op == '+' {
			guardian.groups[pgid] = true
		} else {
			delete(guardian.groups, pgid)
		}
	case '?':
		guardian.starting[what] = true
	case '!':
		delete(guardian.starting, what)
	}
	if guardian.ctl != nil {
		line := append(append([]byte{op}, what...), '\n')
		if _, err := guardian.ctl.Write(line); err == nil {
			return nil
		}
		guardian.ctl.Close() // gone: a new one takes every group
		guardian.ctl = nil
	}
	if op == '-' || op == '!' {
		return nil
	}
	return startGuardian()
}

// Start starts cmd under the proc rules and returns its tree.
//
// The command leads a process group of its own and gets SIGKILL when Skein
// dies. On Linux its group is also registered with Skein's guardian: this
// program, re-executed once by the first Start, which watches a socket
// whose other end only Skein holds. When Skein dies, even of SIGKILL, the
// socket ends, and the guardian kills every registered group — what the
// commands run in the foreground and in the background — before it exits.
// A process that starts its own session (setsid) is not followed. Wait
// kills what the command left in its group and unregisters it.
//
// Where /proc is not mounted the command is started without a guardian, as
// on other systems: it gets SIGKILL when Skein dies, but what it started
// does not.
//
// cmd.ExtraFiles must be empty.
func Start(cmd *exec.Cmd) (*Tree, error) {
	if len(cmd.ExtraFiles) > 0 {
		return nil, errors.New("proc.Start: ExtraFiles are not passed on")
	}
	guarded := canGuard()
	var tag string
	if guarded {
		// The guardian runs before the command does: registering it is
		// then one write, not a guardian's start-up, during which a
		// killed Skein would leave the command's group behind. Until that
		// write, the command is known to the guardian by its tag.
		if err := ensureGuardian(); err != nil {
			return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
		}
		tag = strconv.Itoa(os.Getpid()) + "." + strconv.FormatUint(starts.Add(1), 10)
		cmd.Env = append(cmd.Environ(), startingVar+"="+tag)
		if err := say('?', tag); err != nil {
			return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
		}
		defer func() { _ = say('!', tag) }()
	}
	apply(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &Tree{cmd: cmd, pid: cmd.Process.Pid}
	if guarded {
		if afterStart != nil {
			afterStart(t.pid)
		}
		if err := tell('+', t.pid); err != nil {
			t.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
		}
		t.guarded = true
	}
	return t, nil
}

// Wait waits for the command to exit, as cmd.Wait does, and kills what it
// left running in its group: the group ends with the command. It is killed
// while the command, not yet reaped, still holds its id.
func (t *Tree) Wait() error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, t.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	t.Signal(syscall.SIGKILL)
	err := t.cmd.Wait()
	// Not waited for until the group is empty: what SIGKILL hit is dead,
	// if not yet reaped by whoever inherited it (a container's init may
	// take its time).
	if t.guarded {
		_ = tell('-', t.pid)
	}
	return err
}
