package durable

import (
	"sort"

	"github.com/skeinhq/skein/internal/proc"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// LiveOwner reports whether the run is owned by a process that is alive:
// its lease has not run out and, when it is a process of this host (host,
// this process being pid), that process exists.
func LiveOwner(run *store.Run, host string, pid int) bool {
	if run.LeaseExpired || run.Owner.Token == "" {
		return false
	}
	if run.Owner.Host == host {
		return run.Owner.PID == pid || proc.Alive(run.Owner.PID)
	}
	return true
}

// MissingNodes are the nodes the run's steps are of that w no longer has,
// sorted: their results could not be matched.
func MissingNodes(w *workflow.Workflow, steps []*store.Step) []string {
	var missing []string
	seen := map[string]bool{}
	for _, s := range steps {
		if w.Node(s.Node) == nil && !seen[s.Node] {
			seen[s.Node] = true
			missing = append(missing, s.Node)
		}
	}
	sort.Strings(missing)
	return missing
}
