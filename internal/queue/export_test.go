package queue

// PartsWaiting is how many runs' applies wait for the worker's next
// transaction (commit.go).
func (d *Driver) PartsWaiting() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.parts)
}

// StartsWaiting is how many starts wait for the next transaction of
// starts, and writing how many are under way (start.go).
func (s *Starter) StartsWaiting() (waiting, writing int) {
	g := &s.d.starts
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue), g.writing
}

// StartWriters is how many transactions of starts may be under way at
// once.
func StartWriters() int { return startWriters }

// StartsAbreast is how many starts waiting open another transaction of
// starts beside the ones under way.
const StartsAbreast = startsAbreast

// Expected is how many transactions of the worker expected their runs,
// and how many of them found a run otherwise and were tried again
// (commit.go).
func (d *Driver) Expected() (tries, failed int64) {
	return d.expected.Load(), d.unexpectedTx.Load()
}

// PendingSQL is the statement each worker runs each second to find
// cancel requests and signals (work.go).
const PendingSQL = pendingSQL

// TakeSQL inserts a job a worker takes by local continuation
// (continue.go).
const TakeSQL = takeSQL
