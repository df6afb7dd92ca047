package skein_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/node/nodetest"
	"github.com/skeinhq/skein/workflow"
)

// Every goroutine an engine starts (leases, the committer, database
// pools) ends with its Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bundle is an engine on a folder of its own.
type bundle struct {
	eng *skein.Engine
	dir string
}

func setup(t *testing.T, cfg skein.Config) *bundle {
	t.Helper()
	dir := t.TempDir()
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(dir, ".skein")
	}
	eng, err := skein.Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Close()) })
	return &bundle{eng: eng, dir: dir}
}

// write writes a workflow file into the bundle's folder.
func (b *bundle) write(t *testing.T, name, src string) string {
	t.Helper()
	path := filepath.Join(b.dir, name)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

const approval = `
version: 1
name: approval
nodes:
  - {id: start, type: trigger.manual}
  - {id: draft, type: template, text: "release notes"}
  - {id: approve, type: wait, until: signal, timeout: 24h}
  - id: send
    type: template
    text: "{{ draft.text }} approved by {{ approve.data.by }}"
edges:
  - {from: start, to: draft}
  - {from: draft, to: approve}
  - {from: approve, to: send}
outputs:
  result: "{{ send.text }}"
`

func TestSignal(t *testing.T) {
	t.Parallel()
	b := setup(t, skein.Config{})
	ctx := context.Background()
	file := b.write(t, "approval.yaml", approval)

	doc, err := b.eng.Start(ctx, file, nil, nil)
	require.NoError(t, err)
	require.Equal(t, skein.RunWaiting, doc.Status, "a run that only waits for a signal is left waiting and Start returns")
	id := doc.ExecutionID

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name   string
			run    string
			node   string
			target error
		}{
			{"unknown run", "nosuchrun", "approve", skein.ErrNotFound},
			{"unknown node", id, "nosuch", skein.ErrNoNode},
			{"node that does not wait", id, "draft", skein.ErrNotWaiting},
		}
		for _, tc := range tests {
			_, err := b.eng.Signal(ctx, tc.run, tc.node, nil)
			require.ErrorIs(t, err, tc.target, tc.name)
		}
	})

	doc, err = b.eng.Signal(ctx, id, "approve", map[string]any{"by": "Grace"})
	require.NoError(t, err)
	require.Equal(t, skein.RunCompleted, doc.Status, "the signal resumes the waiting run to its end")
	require.Equal(t, id, doc.ExecutionID)
	require.Equal(t, "release notes approved by Grace", doc.Outputs["result"])

	_, err = b.eng.Signal(ctx, id, "approve", nil)
	require.ErrorIs(t, err, skein.ErrCompleted, "a completed run takes no signal")
}

// gate is a kind whose nodes run until the test opens the gate.
type gate struct {
	started chan<- string
	open    <-chan struct{}
}

func (g gate) Run(ctx context.Context, call *node.Call) (map[string]any, error) {
	g.started <- call.RunID
	select {
	case <-g.open:
		return map[string]any{"passed": true}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func gateKind(started chan<- string, open <-chan struct{}) skein.Kind {
	return skein.Kind{
		Spec: node.Spec{Kind: "test.gate", Category: node.Action, Outputs: []string{"passed"}},
		New:  func() node.Kind { return gate{started: started, open: open} },
	}
}

const gated = `
version: 1
name: gated
nodes:
  - {id: start, type: trigger.manual}
  - {id: hold, type: test.gate}
  - {id: after, type: template, text: "passed: {{ hold.passed }}"}
edges:
  - {from: start, to: hold}
  - {from: hold, to: after}
outputs:
  text: "{{ after.text }}"
`

func TestFollow(t *testing.T) {
	t.Parallel()
	started, open := make(chan string, 1), make(chan struct{})
	b := setup(t, skein.Config{Kinds: []skein.Kind{gateKind(started, open)}})
	ctx := context.Background()
	file := b.write(t, "gated.yaml", gated)

	done := make(chan *skein.RunDoc, 1)
	go func() {
		doc, err := b.eng.Start(ctx, file, nil, nil)
		if err != nil {
			t.Error(err)
		}
		done <- doc
	}()
	id := <-started

	// Follow the running run: once its gate node has started, open the
	// gate; Follow goes on until the run has ended.
	var types []string
	var last int64
	for ev, err := range b.eng.Follow(ctx, id, 0) {
		require.NoError(t, err)
		require.Equal(t, last+1, ev.Seq, "events come in order, each once")
		last = ev.Seq
		types = append(types, ev.Type+" "+ev.Node)
		if ev.Type == skein.EventNodeStarted && ev.Node == "hold" {
			close(open)
		}
	}
	doc := <-done
	require.Equal(t, skein.RunCompleted, doc.Status)
	require.Equal(t, "passed: true", doc.Outputs["text"])
	require.Contains(t, types, "node_finished after", "Follow yields the events recorded after it began")
	require.Equal(t, skein.EventExecutionFinished+" ", types[len(types)-1], "Follow ends with the run's last event")

	evs, err := b.eng.Events(ctx, id, last-1, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1, "Events reads on after a sequence number")
	require.Equal(t, last, evs[0].Seq)

	t.Run("ended context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		var got error
		for _, err := range b.eng.Follow(cctx, "nosuchrun", 0) {
			got = err
		}
		require.Error(t, got, "Follow yields its error last")
	})
}

func TestCancelByContext(t *testing.T) {
	t.Parallel()
	started := make(chan string, 1)
	b := setup(t, skein.Config{Kinds: []skein.Kind{gateKind(started, make(chan struct{}))}})
	file := b.write(t, "gated.yaml", gated)
	ctx, cancel := context.WithCancel(context.Background())

	done := make(chan *skein.RunDoc, 1)
	go func() {
		doc, err := b.eng.Start(ctx, file, nil, nil)
		if err != nil {
			t.Error(err)
		}
		done <- doc
	}()
	id := <-started
	cancel()
	doc := <-done
	require.Equal(t, skein.RunCancelled, doc.Status, "cancelling Start's context cancels the run")
	steps := map[string]string{}
	for _, s := range doc.Steps {
		steps[s.Node] = string(s.Status) + " " + s.SkipReason
	}
	require.Equal(t, map[string]string{"start": "success ", "hold": "cancelled ", "after": "cancelled "}, steps,
		"the running node is stopped, not let finish, and what did not start is cancelled")

	_, err := b.eng.Cancel(context.Background(), id, nil)
	require.ErrorIs(t, err, skein.ErrNotRunning, "a run that ended cannot be cancelled")
}

func TestRerun(t *testing.T) {
	t.Parallel()
	b := setup(t, skein.Config{})
	ctx := context.Background()
	file := b.write(t, "twice.yaml", `
version: 1
name: twice
inputs:
  n: {type: integer}
nodes:
  - {id: start, type: trigger.manual}
  - {id: double, type: set, values: {v: "{{ inputs.n * 2 }}"}}
  - {id: add, type: set, values: {v: "{{ double.v + 1 }}"}}
edges:
  - {from: start, to: double}
  - {from: double, to: add}
outputs:
  v: "{{ add.v }}"
`)
	first, err := b.eng.Start(ctx, file, map[string]any{"n": 20}, &skein.StartOpts{RunID: "first"})
	require.NoError(t, err)
	require.Equal(t, "first", first.ExecutionID, "StartOpts.RunID names the run")

	doc, err := b.eng.Rerun(ctx, "first", &skein.RerunOpts{Pins: []string{"double"}})
	require.NoError(t, err)
	require.NotEqual(t, "first", doc.ExecutionID, "a rerun is a new run")
	require.Equal(t, first.Inputs, doc.Inputs, "with the earlier run's inputs")
	require.EqualValues(t, 41, doc.Outputs["v"])
	for _, s := range doc.Steps {
		require.Equal(t, s.Node == "double", s.Pinned, "only the pinned node is taken from the earlier run: %s", s.Node)
	}

	runs, err := b.eng.List(ctx, &skein.ListOpts{Workflow: "twice"})
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, doc.ExecutionID, runs[0].ID, "newest first")

	_, err = b.eng.Resume(ctx, "first", nil)
	require.ErrorIs(t, err, skein.ErrCompleted)
	_, err = b.eng.Get(ctx, "nosuchrun")
	require.ErrorIs(t, err, skein.ErrNotFound)
}

func TestStartRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t, skein.Config{})
	ctx := context.Background()
	file := b.write(t, "typed.yaml", `
version: 1
name: typed
inputs:
  n: {type: integer}
nodes:
  - {id: start, type: trigger.manual}
  - {id: out, type: set, values: {v: "{{ inputs.n }}"}}
edges:
  - {from: start, to: out}
`)
	_, err := b.eng.Start(ctx, file, map[string]any{"n": "many"}, nil)
	var inputErr *workflow.InputError
	require.ErrorAs(t, err, &inputErr, "inputs are checked against the declared ones")

	_, err = b.eng.Start(ctx, b.write(t, "bad.yaml", "version: 1\nname: bad\nnodes:\n  - {id: x, type: nosuchkind}\n"), nil, nil)
	var invalid *skein.InvalidError
	require.ErrorAs(t, err, &invalid)
	require.NotEmpty(t, invalid.Diagnostics, "every problem is listed")

	w, ds := workflow.Decode("inline.yaml", []byte("version: 1\nname: inline\nnodes:\n  - {id: start, type: trigger.manual}\n  - {id: x, type: nosuchkind}\nedges:\n  - {from: start, to: x}\n"))
	require.False(t, ds.HasErrors())
	_, err = b.eng.StartWorkflow(ctx, w, nil, nil)
	require.ErrorAs(t, err, &invalid, "a workflow the program holds is validated too")
	_, err = b.eng.StartWorkflow(ctx, w, nil, nil)
	require.ErrorAs(t, err, &invalid, "and refused each time it is started")

	// A valid one runs each time it is started (validated once).
	ok, ds := workflow.Decode("ok.yaml", []byte("version: 1\nname: ok\nnodes:\n  - {id: start, type: trigger.manual}\n  - {id: x, type: set, values: {a: 1}}\nedges:\n  - {from: start, to: x}\n"))
	require.False(t, ds.HasErrors())
	for range 2 {
		doc, err := b.eng.StartWorkflow(ctx, ok, nil, nil)
		require.NoError(t, err)
		require.Equal(t, skein.RunCompleted, doc.Status)
	}
}

func TestKinds(t *testing.T) {
	t.Parallel()
	_, ok := node.Default.Lookup("test.gate")
	b := setup(t, skein.Config{Kinds: []skein.Kind{gateKind(nil, nil)}})
	_, inEngine := b.eng.Registry().Lookup("test.gate")
	require.True(t, inEngine, "the engine has the program's kind")
	_, inDefault := node.Default.Lookup("test.gate")
	require.Equal(t, ok, inDefault, "node.Default is not changed")
	_, builtin := b.eng.Registry().Lookup("shell")
	require.True(t, builtin, "the built-in kinds are there too")

	_, err := skein.Open(skein.Config{Dir: t.TempDir(), Kinds: []skein.Kind{{Spec: node.Spec{Kind: "shell"}}}})
	require.True(t, errors.Is(err, node.ErrDuplicate), "a kind that is there already is refused: %v", err)
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	b := setup(t, skein.Config{Database: url})
	ctx := context.Background()
	file := b.write(t, "approval.yaml", approval)

	doc, err := b.eng.Start(ctx, file, nil, nil)
	require.NoError(t, err)
	require.Equal(t, skein.RunWaiting, doc.Status)

	// Another engine on the same database, as another process would be.
	other := setup(t, skein.Config{Database: url})
	doc, err = other.eng.Signal(ctx, doc.ExecutionID, "approve", map[string]any{"by": "Ada"})
	require.NoError(t, err)
	require.Equal(t, skein.RunCompleted, doc.Status)
	require.Equal(t, "release notes approved by Ada", doc.Outputs["result"])

	got, err := b.eng.Get(ctx, doc.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, doc.Outputs, got.Outputs, "the run is in the database both engines share")
}

// A program loads a workflow without a registry of its own: nil is
// node.Default, whose built-in kinds the workflow's nodes are, and the
// engine runs it. A kind that is not registered is a diagnostic, not a
// panic.
func TestLoadWithTheDefaultKinds(t *testing.T) {
	src := "version: 1\nname: two\nnodes:\n  - {id: start, type: trigger.manual}\n  - {id: greet, type: set, values: {text: hi}}\nedges:\n  - {from: start, to: greet}\n"
	w, diags := workflow.LoadSource("two.yaml", []byte(src), nil)
	require.NoError(t, diags.Err())
	b := setup(t, skein.Config{})
	doc, err := b.eng.StartWorkflow(t.Context(), w, nil, nil)
	require.NoError(t, err)
	require.Equal(t, skein.RunCompleted, doc.Status)

	_, diags = workflow.LoadSource("bad.yaml", []byte(strings.Replace(src, "type: set", "type: no.such.kind", 1)), nil)
	require.ErrorContains(t, diags.Err(), "no.such.kind")
}

// With FoldersOnDemand a run that keeps no files has no folder, and what
// it did is read from the database: its outputs, its steps, its events.
func TestFoldersOnDemand(t *testing.T) {
	b := setup(t, skein.Config{FoldersOnDemand: true})
	w, diags := workflow.LoadSource(filepath.Join(b.dir, "greet.yaml"), []byte(`
version: 1
name: greet
nodes:
  - {id: start, type: trigger.manual}
  - {id: greet, type: template, text: "hello"}
edges:
  - {from: start, to: greet}
outputs:
  text: "{{ greet.text }}"
`), nil)
	require.NoError(t, diags.Err())
	doc, err := b.eng.StartWorkflow(t.Context(), w, nil, nil)
	require.NoError(t, err)
	require.Equal(t, skein.RunCompleted, doc.Status)

	_, err = os.Stat(filepath.Join(b.eng.Dir(), "runs", "greet"))
	require.ErrorIs(t, err, os.ErrNotExist, "no run folder")
	got, err := b.eng.Get(t.Context(), doc.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, "hello", got.Outputs["text"])
	require.Len(t, got.Steps, 2)
	events, err := b.eng.Events(t.Context(), doc.ExecutionID, 0, 100)
	require.NoError(t, err)
	require.NotEmpty(t, events)
	require.Equal(t, "execution_finished", string(events[len(events)-1].Type))
}

// TestQueueRunsOwnKindsHere: with Queue on and no worker at all, a
// workflow that uses the program's own kind (which skein workers do not
// have) runs in this process, as with Queue off, and completes.
func TestQueueRunsOwnKindsHere(t *testing.T) {
	t.Parallel()
	started, open := make(chan string, 1), make(chan struct{})
	close(open)
	b := setup(t, skein.Config{Database: pgtest.URL(t), Queue: true, Kinds: []skein.Kind{gateKind(started, open)}})
	doc, err := b.eng.Start(t.Context(), b.write(t, "gated.yaml", gated), nil, nil)
	require.NoError(t, err)
	require.Equal(t, skein.RunCompleted, doc.Status)
	require.Equal(t, "passed: true", doc.Outputs["text"])
	require.Equal(t, doc.ExecutionID, <-started, "the node ran in this process")
}

// TestStartWorkflowOfNil: a nil workflow is a usage error, not a panic.
func TestStartWorkflowOfNil(t *testing.T) {
	t.Parallel()
	b := setup(t, skein.Config{})
	_, err := b.eng.StartWorkflow(t.Context(), nil, nil, nil)
	var ue *skein.UsageError
	require.ErrorAs(t, err, &ue)
	require.Contains(t, err.Error(), "StartWorkflow needs a workflow")
}

// TestExampleKindPassesNodetest: the kind of the example (and of
// docs/library.md) passes the conformance suite the doc says to run.
func TestExampleKindPassesNodetest(t *testing.T) {
	t.Parallel()
	reg := node.NewRegistry()
	reg.MustRegister(shoutKind.Spec, shoutKind.New)
	nodetest.Run(t, reg, "acme.shout", nodetest.Config{Samples: []nodetest.Sample{{Name: "hi", Params: map[string]any{"text": "hi"}}}})
}

// TestQueueNeedsPostgres: Queue without a Postgres database is refused
// when the engine opens, naming the Config field to set.
func TestQueueNeedsPostgres(t *testing.T) {
	t.Parallel()
	_, err := skein.Open(skein.Config{Dir: t.TempDir(), Queue: true})
	var ue *skein.UsageError
	require.ErrorAs(t, err, &ue)
	require.Contains(t, err.Error(), "set Config.Database to a postgres:// URL")
}
