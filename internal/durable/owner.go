package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// OwnedError is a run that another live process runs.
type OwnedError struct{ store.OwnedError }

func (e *OwnedError) Error() string {
	return fmt.Sprintf("run %s is running in %s; wait for it to end, or stop it with `skein cancel %s`",
		e.RunID, e.Owner, e.RunID)
}

// Unwrap makes errors.Is(err, store.ErrOwned) hold.
func (e *OwnedError) Unwrap() error { return store.ErrOwned }

// Owned says who runs run and what to do (an *OwnedError).
func Owned(run *store.Run) error {
	return &OwnedError{OwnedError: store.OwnedError{RunID: run.ID, Owner: run.Owner, LeaseUntil: run.LeaseUntil}}
}

// Claim takes run over from its dead owner for owner, atomically: of
// several claims at once exactly one succeeds; the others get an
// *OwnedError naming the winner. A run whose lease has not run out is
// taken from its owner's token (LiveOwner found it dead).
func Claim(ctx context.Context, st store.Store, run *store.Run, owner store.Owner, ttl time.Duration) (*store.Run, error) {
	takeover := ""
	if !run.LeaseExpired {
		takeover = run.Owner.Token
	}
	claimed, err := st.ClaimRun(ctx, run.ID, owner, ttl, takeover)
	if errors.Is(err, store.ErrOwned) {
		if cur, rerr := st.Run(ctx, run.ID); rerr == nil {
			return nil, Owned(cur)
		}
	}
	return claimed, err
}
