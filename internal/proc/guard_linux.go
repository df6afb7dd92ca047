package proc

import (
	"bufio"
	"os"
	"strconv"
	"syscall"
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
// every group still registered.
func guard(ctl *os.File) {
	syscall.CloseOnExec(3)
	groups := map[int]bool{}
	lines := bufio.NewScanner(ctl)
	for lines.Scan() {
		l := lines.Text()
		if len(l) < 2 {
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
}
