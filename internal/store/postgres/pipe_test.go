package postgres_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// TestPipe: a pipelined transaction commits what its holder deferred and
// what it sent, and nothing of it when it fails or is rolled back; its
// connection goes back to the pool usable.
func TestPipe(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, pgtest.URL(t))
	require.NoError(t, s.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running"}))
	dir := func() string {
		r, err := s.Run(ctx, "r1")
		require.NoError(t, err)
		return r.Dir
	}

	t.Run("Commits", func(t *testing.T) {
		p, err := s.BeginPipe(ctx)
		require.NoError(t, err)
		run, last, err := s.WithTx(p, nil).LockRun(ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, "r1", run.ID)
		b := &pgx.Batch{}
		b.Queue(`UPDATE runs SET dir = 'a' WHERE id = 'r1'`)
		_, err = postgres.QueueSave(b, store.Batch{RunID: "r1", Events: []store.Event{{Time: time.Now(), Type: "x"}}}, last)
		require.NoError(t, err)
		p.Defer(b)
		require.Zero(t, b.Len())
		p.DeferExec(true)
		_, err = p.Exec(ctx, `UPDATE runs SET workflow = 'w2' WHERE id = 'r1'`)
		require.NoError(t, err)
		p.DeferExec(false)
		var n int
		require.NoError(t, p.QueryRow(ctx, `SELECT count(*) FROM events WHERE run_id = 'r1'`).Scan(&n))
		require.Equal(t, 1, n, "the deferred writes went out in front of the query")
		require.NoError(t, p.Commit(ctx))
		require.NoError(t, p.Rollback(ctx), "a rollback after the commit does nothing")
		require.Equal(t, "a", dir())
		r, err := s.Run(ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, "w2", r.Workflow)
	})

	t.Run("ADeferredFailureFailsTheCommit", func(t *testing.T) {
		p, err := s.BeginPipe(ctx)
		require.NoError(t, err)
		b := &pgx.Batch{}
		b.Queue(`UPDATE runs SET dir = 'b' WHERE id = 'r1'`)
		b.Queue(`UPDATE runs SET dir = $1 WHERE id = 'r1'`, "nul\x00byte")
		p.Defer(b)
		require.Error(t, p.Commit(ctx))
		require.Equal(t, "a", dir(), "nothing of the failed transaction was written")
	})

	t.Run("AFailureInFrontFailsTheQuery", func(t *testing.T) {
		p, err := s.BeginPipe(ctx)
		require.NoError(t, err)
		b := &pgx.Batch{}
		b.Queue(`UPDATE runs SET dir = $1 WHERE id = 'r1'`, "nul\x00byte")
		p.Defer(b)
		rows, err := p.Query(ctx, `SELECT id FROM runs`)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		require.Error(t, err)
		require.NoError(t, p.Rollback(ctx))
	})

	t.Run("RolledBack", func(t *testing.T) {
		p, err := s.BeginPipe(ctx)
		require.NoError(t, err)
		_, err = p.Exec(ctx, `UPDATE runs SET dir = 'c' WHERE id = 'r1'`)
		require.NoError(t, err)
		require.NoError(t, p.Rollback(ctx))
		require.Equal(t, "a", dir())
	})

	// Every connection of the pool (4) is usable after the failures.
	for i := range 8 {
		require.NoError(t, s.AppendEvents(ctx, "r1", []store.Event{{Time: time.Now(), Type: fmt.Sprint(i)}}))
	}
}

// TestEventsOfConcurrentWritersAreNumberedInOrder: writers that append
// events to the same run at once — workers in pipelined transactions
// (LockRun, QueueSave) and the group commit (SaveBatch) — number them
// 1, 2, 3… with no gap and no seq given twice: the run's row counts its
// events, read under its lock.
func TestEventsOfConcurrentWritersAreNumberedInOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url) // two processes
	require.NoError(t, a.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running"}))
	const rounds = 40
	worker := func(s *postgres.Store, name string) error {
		for i := range rounds {
			p, err := s.BeginPipe(ctx)
			if err != nil {
				return err
			}
			_, last, err := s.WithTx(p, nil).LockRun(ctx, "r1")
			if err != nil {
				_ = p.Rollback(ctx)
				return err
			}
			bt := &pgx.Batch{}
			evs := []store.Event{{Time: time.Now(), Type: name, Visit: i}, {Time: time.Now(), Type: name, Visit: i}}
			if _, err := postgres.QueueSave(bt, store.Batch{RunID: "r1", Events: evs}, last); err != nil {
				_ = p.Rollback(ctx)
				return err
			}
			p.Defer(bt)
			if err := p.Commit(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	group := func(s *postgres.Store) error {
		for i := range rounds {
			if err := s.SaveBatch(ctx, []store.Batch{{RunID: "r1", Events: []store.Event{{Time: time.Now(), Type: "group", Visit: i}}}}); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, fn := range []func() error{
		func() error { return worker(a, "a") },
		func() error { return worker(b, "b") },
		func() error { return group(b) },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	evs, err := a.Events(ctx, "r1", 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 5*rounds)
	pairs := map[string][]int64{}
	for i, ev := range evs {
		require.Equal(t, int64(i+1), ev.Seq)
		if ev.Type != "group" {
			key := fmt.Sprintf("%s%d", ev.Type, ev.Visit)
			pairs[key] = append(pairs[key], ev.Seq)
		}
	}
	for key, seqs := range pairs {
		require.Len(t, seqs, 2, key)
		require.Equal(t, seqs[0]+1, seqs[1], "the events of transaction %s are adjacent", key)
	}
	more := []store.Event{{Time: time.Now(), Type: "last"}}
	require.NoError(t, a.AppendEvents(ctx, "r1", more))
	require.Equal(t, int64(5*rounds+1), more[0].Seq)
}
