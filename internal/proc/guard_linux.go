package proc

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The re-exec hook: the process Start re-executes is the guardian, and
// never gets to the program's main.
func init() {
	if os.Getenv(guardianVar) == "1" {
		guard(os.NewFile(3, "guardian control"))
		os.Exit(0)
	}
}

// guard is the guardian's life: it reads the groups Skein registers and
// unregisters on ctl until ctl ends — Skein died, or exited — then kills
// every group still registered, and the groups of the commands Skein was
// starting (killStarting).
func guard(ctl *os.File) {
	syscall.CloseOnExec(3)
	groups := map[int]bool{}
	starting := map[string]bool{}
	lines := bufio.NewScanner(ctl)
	for lines.Scan() {
		l := lines.Text()
		if len(l) < 2 {
			continue
		}
		switch l[0] {
		case '?':
			starting[l[1:]] = true
			continue
		case '!':
			delete(starting, l[1:])
			continue
		}
		pgid, err := strconv.Atoi(l[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch l[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	}
	for pgid := range groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	if len(starting) > 0 {
		killStarting(starting)
	}
}

// killStarting kills the groups of the commands Skein was starting when
// it ended, before it registered them: the processes whose environment
// holds one of their tags (startingVar), in the guardian's session (a
// process that started a session of its own is not followed, as a
// registered group's is not).
func killStarting(tags map[string]bool) {
	sid, err := unix.Getsid(0)
	if err != nil {
		return
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !tagged(env, tags) {
			continue
		}
		if s, err := unix.Getsid(pid); err != nil || s != sid {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// tagged reports whether the environment env (NUL-separated) tags its
// process with one of tags.
func tagged(env []byte, tags map[string]bool) bool {
	prefix := []byte(startingVar + "=")
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok && tags[string(v)] {
			return true
		}
	}
	return false
}
