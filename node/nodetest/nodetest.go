// Package nodetest is the conformance suite every node kind passes, the
// contract of package node written as tests. Run checks one kind:
//
//   - spec: every parameter and the kind itself are described, a required
//     parameter has no default, the fall-through handle is a handle, and
//     each sample is a node `skein validate` accepts;
//   - outputs: each sample runs, and what it returns conforms to the spec:
//     its ports are among Spec.Outputs (when the kind declares them), its
//     directives are ones the engine reads, its _route is one of its
//     handles, and the whole output encodes as JSON;
//   - cancelled: given a context already cancelled, the kind returns an
//     error of category cancelled at once; given one cancelled while the
//     call is under way (Config.Block), it returns an error of category
//     cancelled promptly;
//   - params: every value of every JSON type that validation accepts for
//     a parameter (with the sample's other parameters) is accepted at run
//     time: coercion passes it, the kind does not panic and does not
//     refuse it as invalid (an error of category validation);
//   - and everywhere, every error the kind returns is a *node.Error with a
//     code and one of the categories package node declares.
//
// A kind brings what it needs in a Config: sample invocations, the services
// it talks to (fakes: a loopback HTTP server, an in-process MCP server, a
// fake model provider), and the workflow context its parameters refer to
// (mcp_servers:, llm:, child workflow files). A kind whose behaviour lives
// in the engine (no constructor) gets its spec checked only.
//
//	func TestConformance(t *testing.T) {
//		nodetest.Run(t, reg, "mykind", nodetest.Config{
//			Samples: []nodetest.Sample{{Name: "hello", Params: map[string]any{"text": "hi"}}},
//		})
//	}
package nodetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Config is what a kind brings to the suite.
type Config struct {
	// Samples are invocations of the kind. A kind that runs (has a
	// constructor) needs at least one; the first is the one the cancel
	// checks and the parameter sweep start from, so it should succeed.
	Samples []Sample
	// Block, when set, returns an invocation that does not end before its
	// context does (a request the server holds, a command that sleeps,
	// a tool that waits) and a channel closed once the call has reached
	// the thing it waits on. The suite cancels the call then, and
	// requires a cancelled error.
	Block func(t *testing.T) (Sample, <-chan struct{})
	// Services returns the services a call gets; nil gives none. It is
	// called once per call.
	Services func(t *testing.T) *node.Services
	// Workflow holds top-level keys of the workflow the node is validated
	// in, as a workflow file has them: mcp_servers, llm, and the nodes and
	// edges a node of the kind needs around it (a loop's body). The
	// suite's node, with id n, comes first in nodes.
	Workflow map[string]any
	// Files are files written beside that workflow (a child workflow a
	// subworkflow names), by path relative to it.
	Files map[string]string
	// Categories are error categories the kind's errors may have besides
	// those package node declares (a model call's llm_rate_limit).
	Categories []string
	// Refusals are the codes of errors of category validation that a
	// value validation accepts may still get at run time, each with the
	// reason: what only the run can know (whether a folder exists).
	Refusals map[string]string
}

// Sample is one invocation of a kind.
type Sample struct {
	Name string
	// Params are the node's parameters as written in a workflow file
	// (no templates: the suite renders none).
	Params map[string]any
	// Call, when set, adjusts the call before it runs (Passes of a loop,
	// Resume, ProcessStarted).
	Call func(t *testing.T, c *node.Call)
	// Fails, when set, is the code of the error the sample must end with
	// (a fail node); the sample then need not succeed.
	Fails string
	// Check, when set, looks at the output of a successful call.
	Check func(t *testing.T, out map[string]any)
}

// Directives are the keys beginning with "_" that the engine reads from a
// kind's output.
var Directives = []string{"_route", "_state_patch", "_delay_seconds", "_await", "_await_name", "_resume", "_token_usage", "_messages", "_confidence"}

// Categories are the error categories package node declares.
var Categories = []string{
	node.CategoryTemplate, node.CategoryValidation, node.CategoryTimeout, node.CategoryCancelled,
	node.CategoryExecution, node.CategoryHTTPStatus, node.CategoryConnection, node.CategoryInternal,
}

// deadline bounds every call of the suite. Kinds promise much less (a
// cancelled call returns within a second); the bound is generous so that
// a loaded machine does not fail the suite.
const deadline = 10 * time.Second

// Run checks the kind named kind, registered in reg, with what cfg brings.
func Run(t *testing.T, reg *node.Registry, kind string, cfg Config) {
	t.Helper()
	spec, ok := reg.Lookup(kind)
	if !ok {
		t.Fatalf("kind %s is not registered", kind)
	}
	s := &suite{reg: reg, spec: spec, cfg: cfg, dir: t.TempDir()}
	for name, text := range cfg.Files {
		p := filepath.Join(s.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("writing %s: %v", name, err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatalf("writing %s: %v", name, err)
		}
	}
	t.Run("spec", func(t *testing.T) { t.Parallel(); s.specChecks(t) })
	if _, ok := reg.New(kind); !ok {
		if len(cfg.Samples) > 0 {
			t.Errorf("kind %s has samples but no constructor: its behaviour lives in the engine", kind)
		}
		return
	}
	if len(cfg.Samples) == 0 {
		t.Fatalf("kind %s runs (it has a constructor) but its Config has no samples", kind)
	}
	t.Run("outputs", func(t *testing.T) { t.Parallel(); s.outputs(t) })
	t.Run("cancelled", func(t *testing.T) { t.Parallel(); s.cancelled(t) })
	if cfg.Block != nil {
		t.Run("cancelled_while_running", func(t *testing.T) { t.Parallel(); s.cancelledWhileRunning(t) })
	}
	t.Run("params", func(t *testing.T) { t.Parallel(); s.params(t) })
}

type suite struct {
	reg  *node.Registry
	spec *node.Spec
	cfg  Config
	dir  string // where the validated workflow and cfg.Files live
}

func (s *suite) specChecks(t *testing.T) {
	spec := s.spec
	if spec.Description == "" {
		t.Errorf("kind %s has no description", spec.Kind)
	}
	if spec.Category == "" {
		t.Errorf("kind %s has no category", spec.Kind)
	}
	for _, p := range spec.Params {
		if p.Description == "" {
			t.Errorf("parameter %s of %s has no description", p.Name, spec.Kind)
		}
		if p.Required && p.Default != nil {
			t.Errorf("parameter %s of %s is required and has a default", p.Name, spec.Kind)
		}
		if p.Default != nil {
			if _, err := p.Coerce(p.Default); err != nil {
				t.Errorf("the default %v of parameter %s of %s is not a value of its type: %v", p.Default, p.Name, spec.Kind, err)
			}
		}
	}
	if spec.FallThrough != "" && !slices.Contains(spec.AllHandles(nil), spec.FallThrough) {
		t.Errorf("kind %s falls through by %q, which is not one of its handles", spec.Kind, spec.FallThrough)
	}
	for _, smp := range s.cfg.Samples {
		if problems := s.validate(t, smp.Params); len(problems) > 0 {
			t.Errorf("sample %s is not a valid node: %s", smp.Name, strings.Join(problems, "; "))
		}
	}
}

// outputs runs every sample and checks what it returns.
func (s *suite) outputs(t *testing.T) {
	for _, smp := range s.cfg.Samples {
		t.Run(smp.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			out, err := s.runWithin(ctx, t, smp, smp.Params)
			if smp.Fails != "" {
				e := s.requireNodeError(t, err)
				if e != nil && e.Code != smp.Fails {
					t.Errorf("sample %s failed with code %q (%v); want %q", smp.Name, e.Code, e, smp.Fails)
				}
				return
			}
			if err != nil {
				s.requireNodeError(t, err)
				t.Fatalf("sample %s failed: %v", smp.Name, err)
			}
			s.conforms(t, smp.Params, out)
			if smp.Check != nil {
				smp.Check(t, out)
			}
		})
	}
}

// conforms checks an output against the spec.
func (s *suite) conforms(t *testing.T, written map[string]any, out map[string]any) {
	t.Helper()
	if out == nil {
		t.Errorf("kind %s returned a nil output and no error; return an empty map", s.spec.Kind)
		return
	}
	ports, directives := expr.SplitDirectives(out)
	if declared := s.spec.DeclaredOutputs(written); declared != nil {
		for k := range ports {
			if !slices.Contains(declared, k) {
				t.Errorf("kind %s returned port %q, which its spec does not declare (it declares %s)", s.spec.Kind, k, strings.Join(declared, ", "))
			}
		}
	}
	for k, v := range directives {
		if !slices.Contains(Directives, k) {
			t.Errorf("kind %s returned directive %q, which the engine does not read (it reads %s)", s.spec.Kind, k, strings.Join(Directives, ", "))
		}
		if k == "_route" && !s.spec.Routes {
			r, _ := v.(string)
			if handles := s.spec.AllHandles(written); !slices.Contains(handles, r) {
				t.Errorf("kind %s routed to %q, which is not one of its handles %q", s.spec.Kind, v, handles)
			}
		}
	}
	if _, err := json.Marshal(out); err != nil {
		t.Errorf("the output of kind %s does not encode as JSON: %v", s.spec.Kind, err)
	}
}

// cancelled calls the first sample with a context cancelled before the
// call: the kind returns an error of category cancelled (a kind with
// nothing to wait on checks its context first, so that nothing runs on
// for a cancelled run).
func (s *suite) cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	smp := s.cfg.Samples[0]
	out, err := s.runWithin(ctx, t, smp, smp.Params)
	if err == nil {
		t.Fatalf("kind %s ran with a cancelled context and returned %v; want an error of category %s", s.spec.Kind, out, node.CategoryCancelled)
	}
	if e := s.requireNodeError(t, err); e != nil && e.Category != node.CategoryCancelled {
		t.Errorf("with a cancelled context, kind %s failed with category %q (%v); want %s", s.spec.Kind, e.Category, e, node.CategoryCancelled)
	}
}

// cancelledWhileRunning cancels a call that is under way. The promise is a
// return within a second of the cancel; the suite allows deadline, so a
// loaded machine does not fail it, and logs how long it took.
func (s *suite) cancelledWhileRunning(t *testing.T) {
	smp, started := s.cfg.Block(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := s.start(ctx, t, smp, smp.Params)
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("the blocking sample of kind %s returned before it blocked: %v, %v", s.spec.Kind, r.out, r.err)
	case <-time.After(deadline):
		t.Fatalf("the blocking sample of kind %s did not reach its fake within %s", s.spec.Kind, deadline)
	}
	at := time.Now()
	cancel()
	select {
	case r := <-done:
		t.Logf("kind %s returned %s after the cancel", s.spec.Kind, time.Since(at).Round(time.Millisecond))
		if r.err == nil {
			t.Fatalf("kind %s, cancelled while running, returned %v; want an error of category %s", s.spec.Kind, r.out, node.CategoryCancelled)
		}
		if e := s.requireNodeError(t, r.err); e != nil && e.Category != node.CategoryCancelled {
			t.Errorf("cancelled while running, kind %s failed with category %q (%v); want %s", s.spec.Kind, e.Category, e, node.CategoryCancelled)
		}
	case <-time.After(deadline):
		t.Fatalf("kind %s did not return within %s of the cancel (it should within 1s)", s.spec.Kind, deadline)
	}
}

// params sweeps every parameter over one value of each JSON type (and the
// values the parameter declares): each value validation accepts in place
// of the first sample's must be accepted at run time.
func (s *suite) params(t *testing.T) {
	base := s.cfg.Samples[0].Params
	for _, p := range s.spec.Params {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			accepted := 0
			for _, v := range candidates(p, base[p.Name]) {
				params := maps.Clone(base)
				if params == nil {
					params = map[string]any{}
				}
				if v == nil {
					delete(params, p.Name)
				} else {
					params[p.Name] = v
				}
				if len(s.validate(t, params)) > 0 {
					continue // refused before the run: nothing to promise
				}
				accepted++
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				out, err := s.runWithin(ctx, t, Sample{Name: p.Name, Call: s.cfg.Samples[0].Call}, params)
				cancel()
				desc := describe(v)
				if err != nil {
					e := s.requireNodeError(t, err)
					switch {
					case e == nil:
					case e.Code == "param_type":
						t.Errorf("%s %s: validation accepts it, but coercion refuses it: %v", p.Name, desc, e)
					case e.Code == "panic":
						t.Errorf("%s %s: validation accepts it, but kind %s panics: %v", p.Name, desc, s.spec.Kind, e)
					case e.Category == node.CategoryValidation && s.cfg.Refusals[e.Code] == "":
						t.Errorf("%s %s: validation accepts it, but kind %s refuses it at run time: %v", p.Name, desc, s.spec.Kind, e)
					case errors.Is(e, context.DeadlineExceeded):
						t.Errorf("%s %s: kind %s did not return within %s", p.Name, desc, s.spec.Kind, deadline)
					}
					continue
				}
				s.conforms(t, params, out)
			}
			if accepted == 0 {
				t.Errorf("validation accepts none of the values tried for %s; the sample or its Config is wrong", p.Name)
			}
		})
	}
}

// candidates are the values tried for a parameter: one of each JSON type,
// texts that read as other types, the parameter's enum and default, and
// the sample's own value.
func candidates(p node.Param, sample any) []any {
	vals := []any{
		nil, true, false, 0, 1, -1, 2.5, 1e6,
		"", "text", "1", "2.5", "true", "30s", "2026-01-02T15:04:05Z", "http://127.0.0.1:1/x",
		[]any{}, []any{"a"}, []any{1, "b", true},
		map[string]any{}, map[string]any{"k": "v"},
		map[string]any{"s": "text", "n": 1, "f": 2.5, "b": true, "l": []any{"a", 1}, "m": map[string]any{"k": "v"}, "z": nil},
	}
	for _, e := range p.Enum {
		vals = append(vals, e, strings.ToLower(e))
	}
	if p.Default != nil {
		vals = append(vals, p.Default)
	}
	if sample != nil {
		vals = append(vals, sample)
	}
	return vals
}

// validate returns the problems `skein validate` finds with a node of the
// kind with these parameters, in a workflow made of it and cfg.Workflow.
func (s *suite) validate(t *testing.T, params map[string]any) []string {
	t.Helper()
	n := map[string]any{"id": "n", "type": s.spec.Kind}
	for k, v := range params {
		n[k] = v
	}
	doc := map[string]any{"version": 1, "name": "conformance"}
	for k, v := range s.cfg.Workflow {
		doc[k] = v
	}
	more, _ := s.cfg.Workflow["nodes"].([]any)
	doc["nodes"] = append([]any{n}, more...)
	src, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("parameters do not encode as JSON: %v", err)
	}
	w, ds := workflow.Decode(filepath.Join(s.dir, "conformance.json"), src)
	if w != nil {
		ds = append(ds, workflow.Validate(w, s.reg)...)
	}
	var problems []string
	for _, d := range ds {
		if d.Severity == workflow.Error && (d.Path == "nodes[0]" || strings.HasPrefix(d.Path, "nodes[0].") || d.Path == "") {
			problems = append(problems, d.Message)
		}
	}
	return problems
}

// runWithin is run that fails the test when the call outlives ctx by more
// than deadline (a kind that ignores its context).
func (s *suite) runWithin(ctx context.Context, t *testing.T, smp Sample, written map[string]any) (map[string]any, error) {
	t.Helper()
	r := s.start(ctx, t, smp, written)
	var late <-chan time.Time
	for {
		select {
		case res := <-r:
			return res.out, res.err
		case <-ctx.Done():
			if late == nil {
				late = time.After(deadline)
			}
		case <-late:
			t.Fatalf("kind %s did not return within %s of the end of its context", s.spec.Kind, deadline)
		}
	}
}

type result struct {
	out map[string]any
	err error
}

// start calls the kind once, as the engine does, on a goroutine of its
// own: the written parameters coerced to their types with defaults filled
// in, a panic turned into an internal error with code panic.
func (s *suite) start(ctx context.Context, t *testing.T, smp Sample, written map[string]any) <-chan result {
	t.Helper()
	done := make(chan result, 1)
	params, err := Params(s.spec, written)
	if err != nil {
		done <- result{nil, err}
		return done
	}
	k, _ := s.reg.New(s.spec.Kind)
	dir := t.TempDir()
	var services *node.Services
	if s.cfg.Services != nil {
		services = s.cfg.Services(t)
	}
	if services == nil {
		services = &node.Services{}
	}
	scope := &expr.Scope{}
	call := &node.Call{
		RunID: "conformance", NodeID: "n", Visit: 1, Attempt: 1,
		Params: params, Written: written,
		IdempotencyKey: "conformance/n/1",
		Emit:           func(string, map[string]any) {},
		Redact:         func(s string) string { return s },
		Eval:           func(code string) (any, error) { return expr.Eval(code, scope) },
		Now:            time.Now,
		ArtifactDir:    filepath.Join(dir, "artifacts"),
		Files:          node.NewFiles(dir, dir),
		Services:       services,
	}
	if smp.Call != nil {
		smp.Call(t, call)
	}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{nil, &node.Error{Code: "panic", Category: node.CategoryInternal, Message: fmt.Sprintf("kind %s panicked: %v", s.spec.Kind, p)}}
			}
		}()
		out, err := k.Run(ctx, call)
		done <- result{out, err}
	}()
	return done
}

// Params coerces parameters as written to their declared types and fills
// in defaults, as the engine does after rendering them
// (engine.RenderParams): what a kind's Run gets. A value coercion refuses,
// or a required parameter left out, is an error with code param_type, as
// the engine's. A kind's own tests use it to call Run as the engine does.
func Params(spec *node.Spec, written map[string]any) (map[string]any, error) {
	params := make(map[string]any, len(spec.Params))
	for _, p := range spec.Params {
		v, ok := written[p.Name]
		if !ok || v == nil {
			if p.Default != nil {
				params[p.Name] = p.Default
			}
			continue
		}
		if p.Expr || p.Type == node.List && len(p.Items) > 0 {
			params[p.Name] = v
			continue
		}
		cv, err := p.Coerce(v)
		if err != nil {
			return nil, &node.Error{Code: "param_type", Category: node.CategoryValidation, Permanent: true, Err: err, Message: fmt.Sprintf("parameter %s: %v", p.Name, err)}
		}
		if cv == nil {
			if p.Default != nil {
				params[p.Name] = p.Default
			} else if p.Required {
				return nil, &node.Error{Code: "param_type", Category: node.CategoryValidation, Permanent: true, Message: fmt.Sprintf("parameter %s is required, but its value is null", p.Name)}
			}
			continue
		}
		params[p.Name] = cv
	}
	return params, nil
}

// requireNodeError fails the test unless err is a *node.Error with a code,
// a message and a declared category, and returns it.
func (s *suite) requireNodeError(t *testing.T, err error) *node.Error {
	t.Helper()
	var e *node.Error
	if !errors.As(err, &e) {
		t.Errorf("error %q (%T) is not a *node.Error; wrap it with node.Fail to give it a category", err, err)
		return nil
	}
	if e.Code == "" {
		t.Errorf("error %q has no code", e)
	}
	if e.Message == "" {
		t.Errorf("error of code %s has no message", e.Code)
	}
	if cats := append(slices.Clone(Categories), s.cfg.Categories...); !slices.Contains(cats, e.Category) {
		t.Errorf("error %q has category %q, which is not one of %s", e, e.Category, strings.Join(cats, ", "))
	}
	return e
}

// describe names a value in a message.
func describe(v any) string {
	if v == nil {
		return "left out"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
