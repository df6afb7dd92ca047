package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/skeinhq/skein/internal/store"
)

// CreateRun stores a new run.
func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
	args, err := s.st.CreateRunArgs(r)
	if err != nil {
		return err
	}
	op := fmt.Sprintf("creating run %s", r.ID)
	if err := s.prepared(ctx); err != nil {
		return s.failed(op, err)
	}
	if err := ctx.Err(); err != nil {
		return s.failed(op, err) // the group's transaction would not see it
	}
	return s.creates.do(ctx, s, &create{run: r, args: args, op: op})
}

// create is one CreateRun waiting for its transaction.
type create struct {
	run  *store.Run
	args []any
	op   string
	err  error
	done chan struct{}
}

// creates groups the CreateRun calls made at the same time into one
// transaction: a server taking hundreds of webhooks a second pays one
// commit for all the runs that arrived while the last one was written.
// The first caller with nothing in progress writes the group; the others
// wait for it.
type creates struct {
	mu      sync.Mutex
	queue   []*create
	writing bool
}

func (g *creates) do(ctx context.Context, s *Store, c *create) error {
	c.done = make(chan struct{})
	g.mu.Lock()
	g.queue = append(g.queue, c)
	if g.writing {
		g.mu.Unlock()
		<-c.done
		return c.err
	}
	g.writing = true
	for len(g.queue) > 0 {
		group := g.queue
		g.queue = nil
		g.mu.Unlock()
		s.createGroup(context.WithoutCancel(ctx), group)
		for _, c := range group {
			close(c.done)
		}
		g.mu.Lock()
	}
	g.writing = false
	g.mu.Unlock()
	return c.err
}

// createGroup inserts the runs of a group in one transaction; each that
// exists already fails alone (store.ErrExists). When the transaction
// fails, each run is tried in a transaction of its own, so one bad run
// fails no other.
func (s *Store) createGroup(ctx context.Context, group []*create) {
	insert := func(st *sql.Stmt, c *create) error {
		err := s.st.Created(c.run, st.QueryRowContext(ctx, c.args...))
		if errors.Is(err, store.ErrExists) {
			c.err = s.failed(c.op, err)
			return nil
		}
		c.err = nil
		return err
	}
	if len(group) > 1 {
		err := s.write(ctx, "creating runs", func(tx *sql.Tx) error {
			st := tx.StmtContext(ctx, s.insertRunSt) // once for the group
			for _, c := range group {
				if err := insert(st, c); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			return
		}
	}
	for _, c := range group {
		if err := s.write(ctx, c.op, func(tx *sql.Tx) error { return insert(tx.StmtContext(ctx, s.insertRunSt), c) }); err != nil {
			c.err = err
		}
	}
}
