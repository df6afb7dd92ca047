package server

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/skeinhq/skein/internal/runner"
)

// Outcomes of a takeover, the outcome label of skein_takeovers_total.
const (
	takeoverResumed   = "resumed"
	takeoverOwned     = "owned"
	takeoverFailed    = "failed"
	takeoverNotServed = "not_served"
)

// takeovers takes over abandoned runs when the server starts, then every
// Config.TakeoverPoll until ctx ends: a server on a folder that another
// server or a skein run shares takes over their runs when they die, not
// only when it starts.
func (s *Server) takeovers(ctx context.Context) {
	t := time.NewTicker(s.cfg.TakeoverPoll)
	defer t.Stop()
	told := map[string]bool{} // runs not served here, logged once
	for {
		s.takeover(ctx, told)
		s.redeliver(ctx, told)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// takeover resumes the runs a dead owner left running (a server killed, a
// machine that rebooted), of the workflows this server serves: each is
// claimed through its lease (runner.Resume claims it atomically, so of two
// servers starting at once one takes it) and goes on in the background,
// reusing the steps that completed. Runs that ended, that wait, or whose
// owner is alive are not touched; a run of a workflow not served here is
// left interrupted for `skein resume`.
func (s *Server) takeover(ctx context.Context, told map[string]bool) {
	runs, err := s.cfg.Runner.Abandoned(ctx)
	if err != nil {
		s.log.Error("looking for runs to take over", "err", err)
		return
	}
	if len(runs) == 0 {
		return
	}
	c := s.Catalog()
	taken := 0
	for _, run := range runs {
		if ctx.Err() != nil {
			return
		}
		if e := c.Lookup(run.Workflow); e == nil || !sameFile(e.File, run.File) {
			if !told[run.ID] {
				told[run.ID] = true
				s.log.Info("run left interrupted: its workflow file is not served here; resume it with skein resume",
					"run", run.ID, "workflow", run.Workflow, "file", run.File)
				s.cfg.Metrics.Takeover(takeoverNotServed)
			}
			continue
		}
		id := run.ID
		_, err := s.launch(withSource(ctx, SourceTakeover), "run taken over", func(ctx context.Context, o runner.Options) (*runner.Result, error) {
			return s.cfg.Runner.Resume(ctx, runner.ResumeRequest{RunID: id, Options: o})
		})
		switch {
		case err == nil:
			taken++
			s.cfg.Metrics.Takeover(takeoverResumed)
		case errors.Is(err, errShuttingDown):
			return
		case errors.Is(err, runner.ErrOwned):
			s.log.Info("run taken over by another process", "run", id)
			s.cfg.Metrics.Takeover(takeoverOwned)
		default:
			s.log.Error("could not take over a run; it stays interrupted", "run", id, "workflow", run.Workflow, "err", err)
			s.cfg.Metrics.Takeover(takeoverFailed)
		}
	}
	if taken > 0 || !s.tookOver {
		s.tookOver = true
		s.log.Info("took over the runs left by a dead owner", "found", len(runs), "resumed", taken)
	}
}

// redeliver goes on with the deliveries a dead owner left owed (a server
// or a skein run killed while the receiver was down), of the workflows
// this server serves: each is claimed through its lease (of two servers,
// one goes on with it) and goes on in the background with its attempt
// count and backoff, until it succeeds or gives up; a shutdown leaves it
// owed again.
func (s *Server) redeliver(ctx context.Context, told map[string]bool) {
	owed, err := s.cfg.Runner.OwedDeliveries(ctx)
	if err != nil {
		s.log.Error("looking for deliveries owed", "err", err)
		return
	}
	c := s.Catalog()
	for _, od := range owed {
		if ctx.Err() != nil {
			return
		}
		run := od.Run
		e := c.Lookup(run.Workflow)
		if e == nil || !sameFile(e.File, run.File) {
			if key := "delivery " + run.ID; !told[key] {
				told[key] = true
				s.log.Info("delivery left owed: its workflow file is not served here", "run", run.ID, "workflow", run.Workflow, "file", run.File)
			}
			continue
		}
		if !s.enter() {
			return
		}
		o := s.cfg.Options
		o.Observer, o.Leave, o.Hard = nil, s.leave, s.hard
		w := e.W
		go func() {
			defer s.runs.Done()
			err := s.cfg.Runner.Redeliver(context.WithoutCancel(ctx), od, w, o)
			switch {
			case err == nil:
				s.log.Info("went on with a delivery a dead owner left", "run", run.ID, "workflow", run.Workflow, "attempts_before", od.Delivery.Attempts)
			case errors.Is(err, runner.ErrOwned), errors.Is(err, runner.ErrNoRecord):
				// another process went on with it, or it ended
			default:
				s.log.Error("could not go on with a delivery; it stays owed", "run", run.ID, "err", err)
			}
		}()
	}
}

// sameFile reports whether two paths name one file.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	if err1 != nil || err2 != nil {
		return false
	}
	if aa == ab {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(aa)
	rb, err2 := filepath.EvalSymlinks(ab)
	return err1 == nil && err2 == nil && ra == rb
}
