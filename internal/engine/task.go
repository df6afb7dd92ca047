package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/node"
)

// TaskEnv is what calling a node's kind needs beyond the task: what a
// driver holds for the whole run. The local driver and the queue's workers
// both call kinds through it.
type TaskEnv struct {
	Registry *node.Registry
	RunID    string
	// Scope is the run's scope (RunScope): the task adds its own part.
	Scope    expr.Scope
	Redactor *redact.Redactor
	Files    *node.Files
	Services *node.Services
	// Blobs, ArtifactDir and Evidence are optional (Options' fields).
	Blobs       *blob.Store
	ArtifactDir func(nodeID string) string
	Evidence    func(ctx context.Context, nodeID, artifactDir string)
	Now         func() time.Time
	// Emit records an event of the task (a tool call); ProcessStarted
	// the process group its kind started. Both may be nil.
	Emit           func(t *Task, kind string, data map[string]any)
	ProcessStarted func(t *Task, pgid int)
}

// RunScope is the scope every template of a run sees: its inputs, trigger
// payload, secrets and execution; TaskScope adds a task's part. A run
// started without a payload (by hand, or by a trigger that starts by
// default) has its inputs as its trigger, as its trigger node's output
// is; a webhook's or a chat's run has what the trigger fired with.
func RunScope(runID, workflow string, started time.Time, inputs, payload map[string]any, secrets map[string]string) expr.Scope {
	sec := make(map[string]any, len(secrets))
	for k, v := range secrets {
		sec[k] = v
	}
	if payload == nil {
		payload = inputs
	}
	if payload == nil {
		payload = map[string]any{}
	}
	return expr.Scope{
		Inputs:  inputs,
		Trigger: payload,
		Secrets: sec,
		Execution: map[string]any{
			"id": runID, "workflow": workflow, "started_at": started.UTC().Format(time.RFC3339),
		},
	}
}

// TaskScope is the scope of a task's templates: the run's, with the
// variables, messages, loop and node outputs the task started with.
func TaskScope(run expr.Scope, t *Task) expr.Scope {
	run.Vars = t.Vars
	run.Messages = t.Messages
	run.Loop = t.Loop
	run.Nodes = t.Nodes
	return run
}

// Prepare readies a task for its call, as both drivers do: it renders the
// node's parameters in the task's scope (run: the run's scope, RunScope)
// and coerces them (RenderParams), and hashes its configuration — def, the
// node's canonical definition (NodeDef), with the parameters, the loop
// context and the upstream steps' hashes (ConfigHash) — for reuse and the
// step record. A parameter that does not render or coerce fails the task.
//
// clock is what the templates' now() reads: the task's clock (TaskClock).
func Prepare(run expr.Scope, t *Task, def []byte, upstream []string, clock func() time.Time) (params map[string]any, hash string, _ *node.Error) {
	scope := TaskScope(run, t)
	scope.Now = clock
	params, err := RenderParams(t.Node, &scope)
	if err != nil {
		return nil, "", err
	}
	return params, ConfigHash(def, params, t.Loop, upstream), nil
}

// TaskClock is the clock a task's templates and kind read: now (nil: the
// machine's), through the run's recorder when it has one
// (node.ClockService), which keeps the times the task reads, or gives a
// replayed task the times it read when recorded.
func TaskClock(services *node.Services, now func() time.Time, t *Task) func() time.Time {
	if now == nil {
		now = time.Now
	}
	if ck, ok := node.ClockService.Lookup(services); ok {
		return ck.CallClock(&node.Call{NodeID: t.Node.ID, Visit: t.Visit, Attempt: t.Attempt}, now)
	}
	return now
}

// Call runs the task's kind with its rendered parameters and returns the
// outcome: the output split from its directives, or the error (a
// deadline past the node's timeout is a timeout, a panic an internal
// error).
func (e *TaskEnv) Call(ctx context.Context, t *Task, params map[string]any) Outcome {
	pn := t.Node
	kind, ok := e.Registry.New(pn.Type)
	if !ok {
		return Outcome{Err: &node.Error{Code: "no_runner", Category: node.CategoryInternal, Permanent: true,
			Message: fmt.Sprintf("node type %s cannot run in this build of skein", pn.Type)}}
	}
	// A task of a pure kind computes its output at once and waits for
	// nothing (node.Spec.Pure): its timeout could not end it, and it gets
	// no timer (a context and a timer made and stopped on every node of
	// a chain of them).
	if pn.Timeout > 0 && !pn.Spec.Pure {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pn.Timeout)
		defer cancel()
	}
	scope := TaskScope(e.Scope, t)
	red := e.Redactor
	if red == nil {
		red = redact.New(nil)
	}
	call := &node.Call{
		RunID: e.RunID, NodeID: pn.ID, Visit: t.Visit, Attempt: t.Attempt, Params: params,
		Written:        pn.Node.Params,
		IdempotencyKey: e.RunID + "/" + pn.ID + "/" + strconv.Itoa(t.Visit),
		Emit: func(kind string, data map[string]any) {
			if e.Emit != nil {
				e.Emit(t, kind, data)
			}
		},
		Redact: red.Func(),
		Files:  e.Files,
		Eval: func(code string) (any, error) {
			return expr.Eval(code, &scope)
		},
		Now:      TaskClock(e.Services, e.Now, t), // recorded, or replayed
		Passes:   t.Passes,
		Services: e.Services,
		Resume:   t.Resume,
		ProcessStarted: func(pgid int) {
			if e.ProcessStarted != nil {
				e.ProcessStarted(t, pgid)
			}
		},
	}
	scope.Now = call.Now
	if e.ArtifactDir != nil {
		call.ArtifactDir = e.ArtifactDir(pn.ID)
	}
	if e.Blobs != nil {
		call.Blobs = e.Blobs
	}
	ctx = node.WithCall(ctx, call) // a cassette tells requests apart by call
	out, runErr := safeRun(ctx, kind, call)
	if runErr != nil {
		ne := node.AsError(runErr)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && ne.Category != node.CategoryTimeout {
			ne = &node.Error{Code: "timeout", Category: node.CategoryTimeout, Err: runErr,
				Message: fmt.Sprintf("node %s timed out after %s", pn.ID, pn.Timeout)}
		}
		return Outcome{Err: ne}
	}
	clean, directives := expr.SplitDirectives(out)
	if e.Evidence != nil && (len(pn.Node.Checks) > 0 || pn.Node.Expect != "") {
		e.Evidence(ctx, pn.ID, call.ArtifactDir)
	}
	return Outcome{Output: clean, Directives: directives}
}

// Outputs evaluates the workflow's outputs: in scope (RunScope) with the
// run's variables and latest node outputs, or, when it declares none, the
// outputs of the last nodes to finish (those with no out-edges).
func Outputs(plan *Plan, scope expr.Scope, r *Run) (map[string]any, error) {
	w := plan.W
	scope.Vars = r.Vars()
	scope.Messages = r.Messages()
	out := map[string]any{}
	if len(w.Outputs) > 0 {
		scope.Nodes = r.Latest()
		for _, o := range w.Outputs {
			v, err := expr.RenderValue(o.Value, &scope)
			if err != nil {
				return out, fmt.Errorf("output %s: %w", o.Name, err)
			}
			out[o.Name] = v
		}
		return out, nil
	}
	for _, pn := range plan.Nodes {
		if !pn.EndsAPath() {
			continue
		}
		if o := r.LatestOf(pn.Index); o != nil && o["success"] == true {
			clean := make(map[string]any, len(o))
			for k, v := range o {
				if k != "success" && k != "error" {
					clean[k] = v
				}
			}
			out[pn.ID] = clean
		}
	}
	return out, nil
}

// Usage is the tokens and cost an outcome reports (its _token_usage, or
// its error's).
func Usage(oc Outcome) (tokens int, cost float64) {
	if oc.Err != nil {
		return failedUsage(oc.Err)
	}
	return usageOf(oc.Directives)
}

// IsEmpty reports whether a scheduler step changed nothing (an event that
// found nothing to act on: a stale task's end, a stopped timer).
func IsEmpty(a *Actions) bool {
	return len(a.Start) == 0 && len(a.Timers) == 0 && len(a.Steps) == 0 && len(a.Events) == 0 &&
		len(a.Awaits) == 0 && len(a.Stop) == 0 && !a.CancelRunning && !a.Done
}
