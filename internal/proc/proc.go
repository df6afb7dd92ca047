// Package proc holds the rules every child process Skein starts follows:
// the shell kind's commands and stdio MCP servers alike. A child gets an
// explicit environment (never Skein's whole one, which may hold secrets),
// its program is found with the child's own PATH, and it leads a process
// group of its own so that stopping it stops everything it started (Start,
// Tree.Signal, Tree.Await).
//
// A child's group dies with Skein. On Linux, Start registers the group with
// a guardian — this program re-executed once, caught by this package's
// init before main — that kills every registered group when Skein dies,
// even of SIGKILL; Wait kills what the command left in its group when it
// exits. A process that starts its own session (setsid) is not followed.
// Elsewhere nothing watches the group. Either way
// the group of a running step is recorded (node.Call.ProcessStarted), and a
// resume kills a group its dead owner left (KillGroup) before it runs the
// step again, so the new attempt never runs beside what the old one left.
package proc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// BaseEnv names the variables a child gets from Skein's own environment;
// everything else must be given explicitly.
var BaseEnv = []string{"PATH", "HOME", "LANG", "TMPDIR", "USER"}

// Base returns the BaseEnv variables Skein itself has, by name.
func Base() map[string]string {
	vars := make(map[string]string, len(BaseEnv))
	for _, k := range BaseEnv {
		if v, ok := os.LookupEnv(k); ok {
			vars[k] = v
		}
	}
	return vars
}

// ErrNotFound is the reason a program is missing from PATH.
var ErrNotFound = errors.New("not found in PATH")

// LookPath finds the program the way a shell would, with the child's PATH
// (not Skein's), skipping relative PATH entries. A name with a slash is a
// path, relative to dir; it is returned as given.
func LookPath(name, dir, pathList string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := Executable(p); err != nil {
			return "", err
		}
		return name, nil
	}
	for _, d := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if Executable(p) == nil {
			return p, nil
		}
	}
	return "", ErrNotFound
}

// Executable reports why path is not a program that can be run, or nil.
func Executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return &fs.PathError{Op: "exec", Path: path, Err: syscall.EISDIR}
	case fi.Mode()&0o111 == 0:
		return &fs.PathError{Op: "exec", Path: path, Err: fs.ErrPermission}
	}
	return nil
}
