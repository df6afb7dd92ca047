package runlog

import (
	"os"
	"path/filepath"
	"strings"
)

// Remove deletes the run folders dirs that are inside root's runs folder
// (a path elsewhere is left alone), and the workflow folders they leave
// empty. It returns how many run folders it deleted.
func Remove(root string, dirs []string) int {
	runs := filepath.Join(root, "runs")
	parents := map[string]bool{}
	n := 0
	for _, dir := range dirs {
		if dir == "" || !within(runs, dir) {
			continue
		}
		if err := os.RemoveAll(dir); err == nil {
			n++
		}
		parents[filepath.Dir(dir)] = true
	}
	for p := range parents {
		_ = os.Remove(p) // only when empty
	}
	return n
}

// within reports whether path is inside root.
func within(root, path string) bool {
	ra, err1 := filepath.Abs(root)
	pa, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(ra, pa)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}
