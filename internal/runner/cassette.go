package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// ReplaySource is the cassette a run answers its interactions from
// (Options.Replay).
type ReplaySource struct {
	Cassette *cassette.Cassette
	// File, when set, is the cassette's file: the interactions AllowNew
	// sends live are appended to it.
	File string
	// AllowNew sends a request the cassette has no answer for live, and
	// keeps its exchange; without it such a request fails its node with
	// the difference from the one recorded there.
	AllowNew bool
}

// tape returns the cassette tape of an execution: a player for a replay,
// a recorder when the run records (Options.Record, or record: true in
// the workflow), else nil.
func (j job) tape(w *workflow.Workflow, o Options, runID string, started time.Time, red *redact.Redactor, getenv func(string) (string, bool)) *cassette.Tape {
	switch {
	case j.replay != nil:
		return cassette.NewPlayer(j.replay.Cassette, runID, started, red.Func(), j.replay.AllowNew)
	case o.Record || w.Record:
		h := cassette.Header{Workflow: w.Name, RunID: runID, StartedAt: started}
		for _, k := range modelEnv {
			if v, ok := getenv(k); ok {
				if h.Env == nil {
					h.Env = map[string]string{}
				}
				h.Env[k] = red.String(v)
			}
		}
		return cassette.NewRecorder(h, red.Func())
	}
	return nil
}

// modelEnv are the model settings a cassette keeps (Header.Env).
var modelEnv = []string{llm.EnvProvider, llm.EnvModel, llm.EnvBaseURL}

// tapeClient is the models' HTTP client through tape.
func tapeClient(tape *cassette.Tape) *http.Client {
	return &http.Client{Transport: tape.Transport(http.DefaultTransport)}
}

// saveTape writes an execution's cassette in its run folder rl (made
// through it, when made on demand) and, when a replay added entries
// (--allow-new), appends them to the replayed cassette too.
func saveTape(tape *cassette.Tape, rl *runlog.Writer, j job) error {
	c := tape.Cassette()
	if err := rl.Materialize(); err != nil {
		return fmt.Errorf("writing the run's cassette: %w", err)
	}
	if err := c.Write(filepath.Join(rl.Dir(), cassette.FileName)); err != nil {
		return fmt.Errorf("writing the run's cassette: %w", err)
	}
	if j.replay != nil && j.replay.File != "" && tape.Added() > 0 {
		if err := c.Write(j.replay.File); err != nil {
			return fmt.Errorf("appending the new interactions to %s: %w", j.replay.File, err)
		}
	}
	return nil
}

// replayEnv is the environment of a replay: the model settings the
// cassette recorded, and a stand-in for a secret or a model's API key that
// is not set (the cassette holds them masked, and a replay sends nothing).
func replayEnv(getenv func(string) (string, bool), w *workflow.Workflow, recorded map[string]string) func(string) (string, bool) {
	secrets := map[string]bool{}
	for _, s := range w.Secrets {
		secrets[s] = true
	}
	return func(k string) (string, bool) {
		if v, ok := recorded[k]; ok {
			return v, true // the models the recorded run used
		}
		if v, ok := getenv(k); ok {
			return v, true
		}
		name, isSecret := strings.CutPrefix(k, "SKEIN_SECRET_")
		if isSecret && secrets[name] {
			if v, ok := getenv(name); ok {
				return v, true
			}
			return "skein-replay-stand-in-for-" + name, true
		}
		if strings.HasSuffix(k, "API_KEY") {
			return "skein-replay-stand-in-key", true
		}
		return "", false
	}
}

// ReplayRequest re-executes a recorded run from its cassette.
type ReplayRequest struct {
	RunID string
	// WorkflowFile, when set, replaces the run's workflow (an edited
	// one).
	WorkflowFile string
	// AllowNew sends a request the cassette has no answer for live, and
	// appends its exchange to the cassette; without it such a request
	// fails its node with the difference from the recorded one.
	AllowNew bool
	Options
}

// ReplayResult is how a replay went: the new run, and how it compares
// with the recorded one.
type ReplayResult struct {
	*Result
	// Of is the replayed run.
	Of string
	// Diverged are the steps whose status or output differ from the
	// recorded run's, by node and visit.
	Diverged []Divergence
	// Mismatches are the requests the cassette had no answer for.
	Mismatches []*cassette.MismatchError
	// Added is how many interactions were sent live and appended
	// (AllowNew).
	Added int
}

// Divergence is a step of a replay that differs from the recorded run.
type Divergence struct {
	Node  string `json:"node"`
	Visit int    `json:"visit"`
	// What differs: "status", "output", "only_recorded" (the replay did
	// not run it) or "only_replayed".
	What     string `json:"what"`
	Recorded any    `json:"recorded,omitempty"`
	Replayed any    `json:"replayed,omitempty"`
}

// Replay re-executes a recorded run (skein run --record) as a new run that
// sends nothing, spawns no process and spends no tokens: every model, MCP,
// HTTP and shell interaction is answered from the run's cassette.
func (r *Runner) Replay(ctx context.Context, req ReplayRequest) (*ReplayResult, error) {
	run, err := r.run(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	w, err := r.workflowOf(run, req.WorkflowFile)
	if err != nil {
		return nil, err
	}
	src := filepath.Join(run.Dir, cassette.FileName)
	c, err := cassette.Read(src)
	if err != nil {
		return nil, usagef("run %s cannot be replayed: %v", run.ID, err)
	}
	hist, err := r.st.StepHistory(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	res, err := r.execute(ctx, job{w: w, inputs: run.Inputs, trigger: run.Trigger, payload: r.triggerPayload(hist, run.Trigger),
		runID: NewRunID(), replay: &ReplaySource{Cassette: c, File: src, AllowNew: req.AllowNew}}, req.Options)
	if err != nil {
		return nil, err
	}
	out := &ReplayResult{Result: res, Of: run.ID}
	if res.tape != nil {
		out.Mismatches, out.Added = res.tape.Mismatches(), res.tape.Added()
	}
	if res.Engine != nil {
		out.Diverged = diverged(lastSteps(hist), res.Engine.Steps, res.redact, strings.NewReplacer(res.Run.ID, run.ID))
	}
	return out, nil
}

type stepKey struct {
	node  string
	visit int
}

// lastSteps are the recorded run's steps, the last record of each node
// and visit.
func lastSteps(hist []*store.Step) map[stepKey]*store.Step {
	out := map[stepKey]*store.Step{}
	for _, s := range hist {
		if s.Status == engine.StatusPending || s.Status == engine.StatusRunning {
			continue
		}
		k := stepKey{s.Node, s.Visit}
		if p := out[k]; p == nil || s.Generation > p.Generation || (s.Generation == p.Generation && s.StepOrder > p.StepOrder) {
			out[k] = s
		}
	}
	return out
}

// diverged compares a replay's steps with the recorded ones, masked alike,
// with the replay's run id read as the recorded run's (ids: an output that
// names its run is the same output).
func diverged(recorded map[stepKey]*store.Step, replayed []*engine.StepRecord, red *redact.Redactor, ids *strings.Replacer) []Divergence {
	out := []Divergence{}
	now := map[stepKey]*engine.StepRecord{}
	for _, s := range replayed {
		if s.Status == engine.StatusPending || s.Status == engine.StatusRunning {
			continue
		}
		k := stepKey{s.Node, s.Visit}
		if p := now[k]; p == nil || s.StepOrder > p.StepOrder {
			now[k] = s
		}
	}
	for k, s := range now {
		rec := recorded[k]
		switch {
		case rec == nil:
			out = append(out, Divergence{Node: k.node, Visit: k.visit, What: "only_replayed", Replayed: string(s.Status)})
		case rec.Status != s.Status:
			out = append(out, Divergence{Node: k.node, Visit: k.visit, What: "status", Recorded: string(rec.Status), Replayed: string(s.Status)})
		default:
			o, _ := red.Map(s.Output)
			a, b := asJSON(rec.Output), asJSON(o)
			if bs, err := json.Marshal(b); err == nil {
				_ = json.Unmarshal([]byte(ids.Replace(string(bs))), &b)
			}
			if m, ok := a.(map[string]any); ok {
				delete(m, "_directives") // the store keeps them with the output
			}
			if !reflect.DeepEqual(a, b) {
				out = append(out, Divergence{Node: k.node, Visit: k.visit, What: "output", Recorded: a, Replayed: b})
			}
		}
	}
	for k, rec := range recorded {
		if now[k] == nil {
			out = append(out, Divergence{Node: k.node, Visit: k.visit, What: "only_recorded", Recorded: rec.Status})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Visit < out[j].Visit
	})
	return out
}

// asJSON is v as its JSON decodes: numbers float64, so the recorded and
// replayed outputs compare as JSON would.
func asJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// CassetteMismatches are the requests the run's cassette had no answer
// for, when it answered from one (Options.Replay).
func (r *Result) CassetteMismatches() []*cassette.MismatchError {
	if r == nil || r.tape == nil {
		return nil
	}
	return r.tape.Mismatches()
}
