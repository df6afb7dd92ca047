package proc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The re-exec hook: a process started by Start is a supervisor, and never
// gets to the program's main.
func init() {
	if os.Getenv(supervisorVar) == "1" {
		os.Exit(supervise(os.NewFile(3, "supervisor control")))
	}
}

// forwarded are the signals a supervisor passes on to its command's group
// when it gets them itself (Skein signals the group directly).
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// rescan is how often a supervisor killing its tree looks again for
// processes that became its children without it being told (a safety net:
// each death of a child makes it look anyway).
const rescan = 100 * time.Millisecond

// supervise is a supervisor's life: it reads the command from ctl, starts
// it in a group of its own, reports its pid, then reaps until no process
// of the tree is left. It kills the tree when the command exits (what it
// left behind) or when ctl ends (Skein died). It returns the command's
// exit code, or dies of the signal that killed the command.
func supervise(ctl *os.File) int {
	syscall.CloseOnExec(3)
	fail := func(msg string, err error) int {
		os.Stderr.WriteString("skein supervisor: " + msg + ": " + err.Error() + "\n")
		return 126
	}
	// Orphans of the tree become our children, not init's: we can kill
	// them, even those that left the command's group.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("becoming a subreaper", err)
	}
	want, err := readSpec(ctl)
	if err != nil {
		return fail("reading the command", err) // Skein died first, or not our caller
	}
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	sigs := make(chan os.Signal, 8)
	for _, s := range forwarded {
		if !signal.Ignored(s) { // an ignored signal stays ignored for the command too
			signal.Notify(sigs, s)
		}
	}
	pid, err := syscall.ForkExec(want.path, want.args, &syscall.ProcAttr{
		Env:   want.env,
		Files: []uintptr{0, 1, 2},
		// The command gets SIGKILL if we die (of SIGKILL, say): at least
		// it goes with us.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	var reply [8]byte
	var errno syscall.Errno
	if err != nil && !errors.As(err, &errno) {
		errno = syscall.EINVAL
	}
	binary.LittleEndian.PutUint32(reply[:4], uint32(pid))
	binary.LittleEndian.PutUint32(reply[4:], uint32(errno))
	if _, werr := ctl.Write(reply[:]); werr != nil || err != nil {
		if err == nil { // Skein is gone before it knew the pid
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		return 127
	}
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, ctl) // Skein never writes again: this is its end
		close(gone)
	}()

	var status syscall.WaitStatus
	exited, killing := false, false
	ticker := time.NewTicker(rescan)
	ticker.Stop() // runs while the tree is killed
	defer ticker.Stop()
	kill := func() {
		if !killing {
			killing = true
			ticker.Reset(rescan)
		}
		killTree(pid)
	}
	for {
		reaped, last := reap(pid, &status, &exited)
		if last {
			break
		}
		if exited && !killing || killing && reaped { // what the command left goes with it
			kill()
		}
		select {
		case <-chld:
		case s := <-sigs:
			if !killing {
				_ = syscall.Kill(-pid, s.(syscall.Signal))
			}
		case <-gone:
			gone = nil
			kill()
		case <-ticker.C:
			kill()
		}
	}
	if !exited { // Skein died: how the command ended no longer matters
		return 137
	}
	if status.Signaled() {
		dieOf(status.Signal())
	}
	return status.ExitStatus()
}

// reap reaps every child that has exited, noting the command's status. last
// reports that no child is left: the tree is gone (an orphan of the tree is
// our child, so a tree with a living process leaves us one).
func reap(pid int, status *syscall.WaitStatus, exited *bool) (reaped, last bool) {
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ECHILD):
			return reaped, true
		case err != nil || p <= 0:
			return reaped, false
		}
		reaped = true
		if p == pid {
			*status, *exited = ws, true
		}
	}
}

// killTree sends SIGKILL to the command's group and to each of our
// children: orphans of the tree, whatever their group. Their own orphans
// become our children as they die, and are killed at the next call.
func killTree(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for _, c := range children() {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
}

// children lists this process's children: from /proc/self/task/*/children,
// or, on a kernel without those files, from the parent of every process.
func children() []int {
	var out []int
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, w := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(w)); err == nil {
				out = append(out, pid)
			}
		}
	}
	if len(tasks) > 0 {
		return out
	}
	me := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if s, err := parseStat(b); err == nil && s.ppid == me {
			out = append(out, pid)
		}
	}
	return out
}

// dieOf ends this process with sig, so that whoever waits for it sees what
// its command died of. The Go runtime handles most signals itself (it
// would print a trace for SIGQUIT or SIGSEGV and exit 2), so the handler
// is reset to the default with the system call, and no core is dumped.
func dieOf(sig syscall.Signal) {
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	var act [64]byte // a zero kernel sigaction: SIG_DFL, no flags, no mask
	const sigsetSize = 8
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act[0])), 0, sigsetSize, 0, 0)
	_ = syscall.Kill(os.Getpid(), sig)
	// Delivery is asynchronous; a signal whose default is not to die
	// cannot have killed the command, but be sure to end.
	time.Sleep(time.Second)
	os.Exit(128 + int(sig))
}
