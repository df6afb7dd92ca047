package live

import (
	"fmt"
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// t0 is when every scenario's run starts, on its fixed clock.
var t0 = time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)

// script feeds a display what the runner would, on a fixed clock.
type script struct {
	d   Display
	clk *clock.Fake
	n   int // step order
}

func (s *script) at(d time.Duration) time.Time { return t0.Add(d) }

// begin announces the workflow and the run.
func (s *script) begin(nodes ...string) {
	w := &workflow.Workflow{Name: "demo"}
	for _, n := range nodes {
		id, typ, _ := strings.Cut(n, ":")
		w.Nodes = append(w.Nodes, &workflow.Node{ID: id, Type: typ})
	}
	s.d.Workflow(w)
	s.d.Started(&store.Run{ID: "3f2a9c1e0b7d", Workflow: "demo", StartedAt: t0}, false)
	s.ok("start", "trigger.manual", 0)
}

// rec is a step record of node at visit 1.
func (s *script) rec(nodeID, typ string, st engine.Status) engine.StepRecord {
	s.n++
	return engine.StepRecord{StepOrder: s.n, Node: nodeID, Type: typ, Status: st, Visit: 1, Attempts: 1}
}

// run starts node now: its running step and node_started event.
func (s *script) run(nodeID, typ string) {
	r := s.rec(nodeID, typ, engine.StatusRunning)
	now := s.clk.Now()
	r.StartedAt = &now
	s.d.Step(r)
	s.d.Event(engine.TimedEvent{Time: now, Event: engine.Event{Type: engine.EventNodeStarted, Node: nodeID, Visit: 1}})
}

// end finishes a step that started at start, now.
func (s *script) end(r engine.StepRecord, start time.Duration) {
	st, now := s.at(start), s.clk.Now()
	r.StartedAt, r.FinishedAt = &st, &now
	r.DurationMS = now.Sub(st).Milliseconds()
	s.d.Step(r)
}

func (s *script) ok(nodeID, typ string, start time.Duration) {
	s.end(s.rec(nodeID, typ, engine.StatusSuccess), start)
}

func (s *script) wait(d time.Duration) { s.clk.Advance(d) }

// scenarios are the runs both displays are shown, by name.
var scenarios = []struct {
	name string
	play func(s *script)
}{
	{"running", func(s *script) {
		s.begin("start:trigger.manual", "fetch:http", "build:shell", "lint:shell", "each:foreach", "sq:shell")
		s.run("fetch", "http")
		s.run("build", "shell")
		s.wait(300 * time.Millisecond)
		lint := s.rec("lint", "shell", engine.StatusPending)
		s.d.Step(lint) // --concurrency 2: lint waits for a slot
		s.wait(1200 * time.Millisecond)
		s.ok("fetch", "http", 0)
		s.run("each", "foreach")
		s.d.Event(engine.TimedEvent{Time: s.clk.Now(), Event: engine.Event{Type: engine.EventLoopIteration, Node: "each", Visit: 1,
			Data: map[string]any{"index": 2, "total": 4}}})
		sq := s.rec("sq", "shell", engine.StatusRunning)
		sq.Loop = map[string]any{"index": 2, "total": 4, "iteration": 2}
		now := s.clk.Now()
		sq.StartedAt = &now
		s.d.Step(sq)
		s.wait(700 * time.Millisecond)
	}},
	{"retry", func(s *script) {
		s.begin("start:trigger.manual", "fetch:http")
		s.run("fetch", "http")
		s.wait(400 * time.Millisecond)
		f := s.rec("fetch", "http", engine.StatusFailed)
		f.Retry = true
		f.Error = &node.Error{Message: "HTTP 503 Service Unavailable"}
		s.end(f, 0)
		s.d.Event(engine.TimedEvent{Time: s.clk.Now(), Event: engine.Event{Type: engine.EventRetry, Node: "fetch", Visit: 1,
			Data: map[string]any{"attempt": 2, "max_attempts": 3, "delay_ms": int64(2000), "error": "HTTP 503 Service Unavailable"}}})
		s.wait(500 * time.Millisecond)
	}},
	{"retried", func(s *script) {
		s.begin("start:trigger.manual", "fetch:http")
		s.run("fetch", "http")
		s.wait(400 * time.Millisecond)
		f := s.rec("fetch", "http", engine.StatusFailed)
		f.Retry = true
		f.Error = &node.Error{Message: "HTTP 503 Service Unavailable"}
		s.end(f, 0)
		s.d.Event(engine.TimedEvent{Time: s.clk.Now(), Event: engine.Event{Type: engine.EventRetry, Node: "fetch", Visit: 1,
			Data: map[string]any{"attempt": 2, "max_attempts": 3, "delay_ms": int64(2000), "error": "HTTP 503 Service Unavailable"}}})
		s.wait(2 * time.Second)
		r := s.rec("fetch", "http", engine.StatusRunning)
		r.Attempts = 2
		s.d.Step(r)
		s.d.Event(engine.TimedEvent{Time: s.clk.Now(), Event: engine.Event{Type: engine.EventNodeStarted, Node: "fetch", Visit: 1,
			Data: map[string]any{"attempt": 2}}})
		s.wait(1300 * time.Millisecond)
		done := s.rec("fetch", "http", engine.StatusSuccess)
		done.Attempts = 2
		s.end(done, 0) // the step's record spans both attempts; the line shows the last
	}},
	{"cancel", func(s *script) {
		s.begin("start:trigger.manual", "summarise:llm", "notify:http", "archive:shell")
		s.run("summarise", "llm")
		s.run("archive", "shell")
		s.wait(2100 * time.Millisecond)
		s.d.Say("cancelling: waiting for running nodes (Ctrl-C again to stop them now)")
		a := s.rec("archive", "shell", engine.StatusCancelled)
		a.Error = &node.Error{Message: "the run was cancelled and its grace period ran out"}
		s.end(a, 0)
		sk := s.rec("notify", "http", engine.StatusSkipped)
		s.d.Step(sk)
		s.wait(400 * time.Millisecond)
	}},
	{"branch", func(s *script) {
		s.begin("start:trigger.manual", "rainy:if", "umbrella:llm", "done:template", "region:switch")
		r := s.rec("rainy", "if", engine.StatusSuccess)
		r.Directives = map[string]any{"_route": "true"}
		s.wait(2 * time.Millisecond)
		s.end(r, 0)
		sw := s.rec("region", "switch", engine.StatusSuccess)
		sw.Directives = map[string]any{"_route": "eu"}
		s.end(sw, 0)
		s.d.Step(s.rec("done", "template", engine.StatusSkipped))
		s.run("umbrella", "llm")
		s.wait(1 * time.Second)
		u := s.rec("umbrella", "llm", engine.StatusSuccess)
		u.Tokens, u.CostUSD = 1234, 0.0021
		s.end(u, 2*time.Millisecond)
	}},
	{"failure", func(s *script) {
		s.begin("start:trigger.manual", "build:shell", "deploy:shell")
		s.run("build", "shell")
		s.wait(3200 * time.Millisecond)
		f := s.rec("build", "shell", engine.StatusFailed)
		var stderr strings.Builder
		for i := 1; i <= 25; i++ {
			fmt.Fprintf(&stderr, "compile: step %d of 25\n", i)
		}
		stderr.WriteString("error: main.go:12: undefined: frob\n\n")
		f.Error = &node.Error{Message: `command "sh" exited with status 1`, Details: map[string]any{"exit_code": 1, "stderr": stderr.String()}}
		s.end(f, 0)
		s.d.Step(s.rec("deploy", "shell", engine.StatusSkipped))
	}},
}
