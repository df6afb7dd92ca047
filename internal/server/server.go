package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/pathscrub"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/schedule"
	"github.com/skeinhq/skein/node"
)

// Authenticator tells the scope of a bearer token; a token it does not
// know is an error.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (auth.Scope, error)
}

// Config configures a Server.
type Config struct {
	// Runner carries out and inspects the runs; required.
	Runner *runner.Runner
	// Workflows is the folder whose workflow files are served; required.
	Workflows string
	// Auth checks the bearer tokens of requests. Nil serves without
	// authentication: every request may do everything (--no-auth, for
	// loopback addresses only).
	Auth Authenticator
	// Registry holds the node kinds; default node.Default.
	Registry *node.Registry
	// Log receives the server's structured logs; default slog.Default().
	Log *slog.Logger
	// Options are the options of every execution the server starts
	// (concurrency, secrets file, network policy).
	Options runner.Options
	// Grace is how long running nodes may take to finish when the server
	// shuts down, before they are stopped; default 30 s.
	Grace time.Duration
	// EventPoll is how often an event stream looks for new events of a
	// run this server does not execute (one of the CLI's or another
	// server's); default 250 ms.
	EventPoll time.Duration
	// KeepAlive is how long an event stream stays quiet before it sends a
	// comment, so proxies keep it open; default 15 s.
	KeepAlive time.Duration
	// ParkAfter: an execution whose run only waits — for a signal, or for
	// timers due later than this — ends and leaves the run waiting, held
	// by no goroutine; a signal, or the server when the wake-up time comes,
	// resumes it. Default (0) 1 minute; negative holds every wait in the
	// process. Options.Park, when set, is used instead.
	ParkAfter time.Duration
	// WakePoll is how often the server looks in the store for waiting runs
	// whose wake-up time has come (its own, and those the CLI or another
	// server left); default 1 s.
	WakePoll time.Duration
	// TakeoverPoll is how often the server looks for runs whose owner died
	// (takeover), after the look it takes when it starts; default 30 s.
	TakeoverPoll time.Duration
	// MaxRunning bounds the executions in progress; a request that would
	// start one more waits a second for a slot, then is answered 503
	// busy. Default DefaultMaxRunning.
	MaxRunning int
	// Clock is the schedules' clock; default the wall clock.
	Clock clock.Clock
	// Metrics are served at /metrics; default NewMetrics().
	Metrics *Metrics
	// Tracer, when set, gets a span per execution and per node step
	// (TracerFromEnv).
	Tracer trace.TracerProvider
}

// Server is Skein's HTTP API over a runner. Create it with New, serve its
// Handler, and call Shutdown to stop.
type Server struct {
	cfg     Config
	log     *slog.Logger
	catalog atomic.Pointer[Catalog]
	mux     *http.ServeMux
	routes  []Route
	hub     hub
	keys    keyLocks
	hooks   atomic.Pointer[hookCache]
	slots   slots
	sched   *schedule.Scheduler
	tracer  trace.Tracer
	// loops are the background loops Serve starts (takeover, schedules,
	// workflow versions); reloaded wakes the versions loop.
	loops sync.WaitGroup
	// tookOver: the takeover loop has logged what it found once.
	tookOver bool
	reloaded chan struct{}

	// Executions in progress. leave and hard are closed on Shutdown.
	mu       sync.Mutex
	stopping bool
	runs     sync.WaitGroup
	leave    chan struct{}
	hard     chan struct{}
	// closing is closed when HTTP serving stops: event streams end.
	closing     chan struct{}
	closingOnce sync.Once
	// csrfKey signs the web viewer's CSRF tokens (session.go).
	csrfKey [32]byte
	// paths rewrites the server's paths in problems' details.
	paths *pathscrub.Scrubber
	// editMu makes the editor's saves one at a time: each compares the
	// file's hash and writes it with no other save between.
	editMu sync.Mutex
}

// New makes a server and loads its workflows. A workflow file that does
// not validate is logged and not served; a folder that cannot be read is
// an error.
func New(cfg Config) (*Server, error) {
	if cfg.Runner == nil || cfg.Workflows == "" {
		return nil, errors.New("server: Config.Runner and Config.Workflows are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 30 * time.Second
	}
	if cfg.EventPoll <= 0 {
		cfg.EventPoll = 250 * time.Millisecond
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.Options.Park == nil && cfg.ParkAfter >= 0 {
		after := cfg.ParkAfter
		if after == 0 {
			after = time.Minute
		}
		cfg.Options.Park = &runner.Park{After: after}
	}
	if cfg.WakePoll <= 0 {
		cfg.WakePoll = time.Second
	}
	if cfg.TakeoverPoll <= 0 {
		cfg.TakeoverPoll = 30 * time.Second
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = DefaultMaxRunning
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider()
	}
	s := &Server{cfg: cfg, log: cfg.Log, leave: make(chan struct{}), hard: make(chan struct{}), closing: make(chan struct{}),
		reloaded: make(chan struct{}, 1), tracer: cfg.Tracer.Tracer("github.com/skeinhq/skein/internal/server"),
		slots: make(slots, cfg.MaxRunning)}
	s.paths = pathscrub.New(map[string]string{cfg.Runner.Dir(): "the data folder", cfg.Workflows: "the workflows folder",
		os.TempDir(): "the temporary folder"})
	s.sched = schedule.New(schedule.Config{Store: cfg.Runner.ScheduleState(), Runs: scheduleRuns{s}, Clock: cfg.Clock, Log: cfg.Log.With("component", "schedules"),
		Outcome: cfg.Metrics.ScheduleFires})
	if cfg.Runner.Place(runner.StartRequest{}) == runner.PlaceQueue {
		cfg.Metrics.watchQueue(cfg.Runner.QueueJobs, cfg.Log)
	}
	s.hub.init()
	s.keys.init()
	if _, err := rand.Read(s.csrfKey[:]); err != nil {
		return nil, fmt.Errorf("making the CSRF key: %w", err)
	}
	if err := s.Reload(); err != nil {
		return nil, fmt.Errorf("loading the workflows of %s: %w", cfg.Workflows, err)
	}
	s.mux = http.NewServeMux()
	s.register()
	return s, nil
}

// Handler is the server's HTTP handler: every route, behind
// authentication and request logging.
func (s *Server) Handler() http.Handler {
	return s.logRequests(s.authenticate(s.mux))
}

// Serve serves HTTP on ln until ctx ends, then shuts down: it stops taking
// requests, ends event streams, lets running nodes finish within
// Config.Grace (then stops them) and leaves unfinished runs interrupted,
// for a resume. It returns once every execution has stopped.
//
// While it serves, it fires the schedules of the served workflows, stores
// each workflow's version as it is loaded, resumes the waiting runs whose
// wake-up time has come (wake), and on start takes over the runs a dead
// owner left running (takeover; waiting runs are not taken over).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	hs.RegisterOnShutdown(s.closeStreams)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	s.log.Info("listening", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String(), "workflows", s.cfg.Workflows,
		"auth", s.cfg.Auth != nil)
	stopLoops := s.startLoops(ctx)
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
		s.log.Info("shutting down", "grace", s.cfg.Grace.String())
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if serr := hs.Shutdown(stopCtx); serr != nil {
			_ = hs.Close()
		}
		cancel()
		<-served
	}
	stopLoops()
	s.Shutdown()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// closeStreams ends the event streams being served.
func (s *Server) closeStreams() { s.closingOnce.Do(func() { close(s.closing) }) }

// Shutdown stops the executions the server runs: nothing new starts in
// them, running nodes get Config.Grace to finish and are then stopped, and
// each run is left interrupted (resumable). No execution starts after it.
// It returns once every execution has stopped.
func (s *Server) Shutdown() {
	s.closeStreams()
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		s.runs.Wait()
		return
	}
	s.stopping = true
	close(s.leave)
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	t := time.NewTimer(s.cfg.Grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("grace period over: stopping running nodes")
		s.StopNow()
		<-done
	}
	s.log.Info("executions stopped")
}

// StopNow stops the running nodes of the executions at once, without
// waiting for the grace period of a Shutdown (a second Ctrl-C).
func (s *Server) StopNow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.hard:
	default:
		close(s.hard)
	}
}

// enter counts an execution in, unless the server is shutting down.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.runs.Add(1)
	return true
}

// launch carries out an execution in the background and returns once its
// run is recorded (or the execution failed before that). The execution
// outlives the request: it ends with its run, or on Shutdown.
func (s *Server) launch(ctx context.Context, what string, do func(context.Context, runner.Options) (*runner.Result, error)) (*record.Run, error) {
	if err := s.slots.acquire(ctx); err != nil {
		return nil, err
	}
	if !s.enter() {
		s.slots.release()
		return nil, errShuttingDown
	}
	obs := &observer{started: make(chan *record.Run, 1), hub: &s.hub}
	tel := s.observe(ctx, obs)
	o := s.cfg.Options
	o.Observer, o.Leave, o.Hard = tel, s.leave, s.hard
	o.Source = sourceOf(ctx) // the new run's record keeps it; a resume keeps the run's
	failed := make(chan error, 1)
	bg := context.WithoutCancel(ctx)
	go func() {
		defer s.runs.Done()
		defer s.slots.release()
		res, err := do(bg, o)
		tel.end(res)
		if err != nil {
			failed <- err
			return
		}
		s.hub.notify(res.Run.ID)
		if res.Detached {
			return // the queue's workers run it; the start was logged
		}
		attrs := []any{"run", res.Run.ID, "workflow", res.Run.Workflow, "status", res.Run.Status}
		if res.Run.FinishedAt != nil {
			attrs = append(attrs, "duration_ms", res.Run.FinishedAt.Sub(res.Run.StartedAt).Milliseconds())
		}
		if res.Err != nil {
			s.log.Error("run ended with an error", append(attrs, "err", res.Err)...)
			return
		}
		if res.Run.Status == record.RunWaiting {
			if res.Run.WakeAt != nil {
				attrs = append(attrs, "wake_at", res.Run.WakeAt.Format(time.RFC3339))
			}
			s.log.Info("run waiting", attrs...)
			return
		}
		s.log.Info("run ended", attrs...)
	}()
	select {
	case run := <-obs.started:
		s.log.Info(what, "run", run.ID, "workflow", run.Workflow, "generation", run.Generation)
		return run, nil
	case err := <-failed:
		return nil, err
	}
}

// wake resumes, every Config.WakePoll until ctx ends, the waiting runs
// whose wake-up time has come: a timer of theirs is due, or a signal was
// recorded for them (runner.Due). A run another process resumed first is
// left to it; when every execution slot is taken (Config.MaxRunning) the
// due runs wait for a later poll.
func (s *Server) wake(ctx context.Context) {
	t := time.NewTicker(s.cfg.WakePoll)
	defer t.Stop()
	// A run that cannot be resumed (its workflow file is gone or no
	// longer valid) stays due: it is tried again after a growing pause,
	// not at every poll.
	type retry struct {
		at    time.Time
		pause time.Duration
	}
	failed := map[string]retry{}
	for {
		due, err := s.cfg.Runner.Due(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("looking for waiting runs to wake", "err", err)
		}
		now := time.Now()
	runs:
		for _, run := range due {
			id := run.ID
			if f, ok := failed[id]; ok && now.Before(f.at) {
				continue
			}
			_, err := s.launch(withSource(ctx, SourceWake), "run woken", func(ctx context.Context, o runner.Options) (*runner.Result, error) {
				return s.cfg.Runner.Resume(ctx, runner.ResumeRequest{RunID: id, Options: o})
			})
			switch {
			case err == nil, errors.Is(err, runner.ErrOwned):
				delete(failed, id)
			case errors.Is(err, errShuttingDown):
				return
			case errors.Is(err, errBusy):
				// Every execution slot is taken (--max-runs): the due runs
				// stay due and are woken at a later poll.
				if ctx.Err() == nil {
					s.log.Warn("waking waiting runs: the server is busy; they wait for the next poll", "due", len(due))
				}
				break runs
			default:
				pause := min(max(2*failed[id].pause, time.Minute), time.Hour)
				failed[id] = retry{at: now.Add(pause), pause: pause}
				s.log.Error("waking a waiting run", "run", id, "err", err, "next_try_in", pause.String())
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// observer hears of one execution: when its run is recorded, and each
// committed step and event, which wake the run's event streams.
type observer struct {
	started chan *record.Run
	hub     *hub
	runID   atomic.Value
}

func (o *observer) Started(run *record.Run, _ bool) {
	o.runID.Store(run.ID)
	select {
	case o.started <- run:
	default: // started again: resumed at once for a signal (launch took the first)
	}
}

func (o *observer) Step(record.Step)        { o.wake() }
func (o *observer) Event(record.TimedEvent) { o.wake() }
func (o *observer) Note(runner.Note)        {}

func (o *observer) wake() {
	if id, ok := o.runID.Load().(string); ok {
		o.hub.notify(id)
	}
}

// hub wakes the event streams of a run when its records are committed.
type hub struct {
	mu   sync.Mutex
	subs map[string]chan struct{}
}

func (h *hub) init() { h.subs = map[string]chan struct{}{} }

// wait returns a channel closed at the run's next notify.
func (h *hub) wait(id string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.subs[id]
	if ch == nil {
		ch = make(chan struct{})
		h.subs[id] = ch
	}
	return ch
}

func (h *hub) notify(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch := h.subs[id]; ch != nil {
		close(ch)
		delete(h.subs, id)
	}
}

// forget drops the run's channel when no stream waits on it any more (a
// run of another process, never notified).
func (h *hub) forget(id string, ch <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur, ok := h.subs[id]; ok && (<-chan struct{})(cur) == ch {
		delete(h.subs, id)
	}
}

// keyLocks serialises the requests that carry one idempotency key.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

func (k *keyLocks) init() { k.locks = map[string]*keyLock{} }

func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
