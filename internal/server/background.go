package server

import (
	"context"
	"crypto/sha256"
)

// startLoops starts the server's background loops: the takeover of
// abandoned runs (at start, then every Config.TakeoverPoll), the wake-up poll of waiting runs, the schedules,
// and the versions of the workflows loaded. The returned function stops
// them and waits for them.
func (s *Server) startLoops(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.loops.Add(4)
	go func() {
		defer s.loops.Done()
		s.wake(ctx)
	}()
	go func() {
		defer s.loops.Done()
		s.takeovers(ctx)
	}()
	go func() {
		defer s.loops.Done()
		_ = s.sched.Run(ctx)
	}()
	go func() {
		defer s.loops.Done()
		s.versionWorkflows(ctx)
	}()
	return func() {
		cancel()
		s.loops.Wait()
	}
}

// versionWorkflows stores each workflow served as a version in the store
// (a new version when its file changed), after every reload, until ctx
// ends.
func (s *Server) versionWorkflows(ctx context.Context) {
	saved := map[string][32]byte{}
	for {
		for _, e := range s.Catalog().Workflows {
			sum := sha256.Sum256(e.Source)
			if saved[e.Name] == sum {
				continue
			}
			v, err := s.cfg.Runner.SaveWorkflow(ctx, e.Name, e.Source)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("storing the workflow's version", "workflow", e.Name, "err", err)
				}
				continue
			}
			saved[e.Name] = sum
			s.log.Debug("workflow version stored", "workflow", e.Name, "version", v)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.reloaded:
		}
	}
}
