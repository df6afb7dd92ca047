package runner

import (
	"github.com/skeinhq/skein/internal/store/postgres"
)

// Placement is where a new run's nodes run: in this process, or as jobs
// of the queue that `skein worker` processes take (Enqueue). The runner
// decides it for every front end alike (Place).
type Placement string

// The placements.
const (
	// PlaceAuto: on the queue when the database is Postgres, in this
	// process otherwise (DESIGN §6). A run that keeps a cassette (Record,
	// Replay, record: true in the workflow) or answers nodes from Mock
	// runs here, where its interactions are.
	PlaceAuto Placement = ""
	// PlaceLocal: in this process (skein run --local).
	PlaceLocal Placement = "local"
	// PlaceQueue: on the queue (skein run --queue); Start refuses it
	// without a Postgres database, or for a run that keeps a cassette.
	PlaceQueue Placement = "queue"
)

// Place says where Start runs req: PlaceLocal or PlaceQueue. The
// request's placement wins over the runner's (Config.Placement); PlaceAuto
// is decided by the database.
func (r *Runner) Place(req StartRequest) Placement {
	p := req.Placement
	if p == PlaceAuto {
		p = r.cfg.Placement
	}
	if p != PlaceAuto {
		return p
	}
	if _, pg := r.st.(*postgres.Store); !pg {
		return PlaceLocal
	}
	if req.Record || req.Replay != nil || req.Mock != nil || (req.Workflow != nil && req.Workflow.Record) {
		return PlaceLocal
	}
	return PlaceQueue
}

// Queued reports whether the runs Config opens a runner for go to the
// queue unless a request says otherwise: a front end checks its flags
// with it before opening the runner.
func (c Config) Queued() bool {
	switch c.Placement {
	case PlaceQueue:
		return true
	case PlaceLocal:
		return false
	}
	if c.Store != nil {
		_, pg := c.Store.(*postgres.Store)
		return pg
	}
	return postgres.IsURL(c.DB)
}
