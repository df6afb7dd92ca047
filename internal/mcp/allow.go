package mcp

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/skeinhq/skein/workflow"
)

// AllowList returns an Allow hook that accepts only the listed programs: an
// operator's list for skein serve, where workflows come from other people.
// A bare name ("npx") is looked up in Skein's PATH now, a path is taken as
// written, and the program a server would run must be one of them: a
// workflow that puts its own folder first in the server's PATH does not get
// its own "npx" through.
//
// An interpreter on the list (node, python, npx) runs whatever its
// arguments say; list the servers' own programs where you can.
func AllowList(commands ...string) func(program string) error {
	allowed := map[string]bool{}
	for _, c := range commands {
		p := c
		if !strings.Contains(c, "/") {
			found, err := exec.LookPath(c)
			if err != nil {
				continue
			}
			p = found
		}
		if abs, err := filepath.Abs(p); err == nil {
			allowed[filepath.Clean(abs)] = true
		}
	}
	return func(program string) error {
		if allowed[filepath.Clean(program)] {
			return nil
		}
		return fmt.Errorf("it is not on the allowlist (%s)", joinNames(commands))
	}
}

// joinNames lists names for a message: "a, b, c", or "none".
func joinNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// didYouMean suggests the name closest to s, when one is close.
func didYouMean(s string, names []string) string {
	lower := make([]string, len(names))
	byLower := map[string]string{}
	for i, n := range names {
		lower[i] = strings.ToLower(n)
		byLower[lower[i]] = n
	}
	best, ok := workflow.Closest(strings.ToLower(s), lower)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", byLower[best])
}
