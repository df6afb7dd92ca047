package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/rundoc"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
	_ "github.com/skeinhq/skein/node/standard"
)

const schemaFile = "../../schema/run.schema.json"

type bundle struct {
	ctx context.Context
	r   *runner.Runner
	dir string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	dir := t.TempDir()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return &bundle{ctx: t.Context(), r: r, dir: dir}
}

func (b *bundle) write(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(b.dir, name)
	require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	return p
}

const chain = `version: 1
name: chain
inputs:
  who: {type: string, default: world}
nodes:
  - {id: a, type: set, values: {x: 1}}
  - {id: b, type: template, text: "hi {{ inputs.who }}"}
edges:
  - {from: a, to: b}
`

// compileSchema compiles schema/run.schema.json.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(rundoc.SchemaID, doc))
	s, err := c.Compile(rundoc.SchemaID)
	require.NoError(t, err)
	return s
}

// ValidateRunDoc checks a run document (as JSON) against the schema.
func validateDoc(t *testing.T, s *jsonschema.Schema, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	require.NoError(t, s.Validate(inst), "%s", b)
}

func TestStartGetAndTheOneShape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "chain.yaml", chain))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, Inputs: map[string]any{"who": "Ada"}})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	require.Equal(t, "completed", string(res.Run.Status))
	require.Equal(t, store.Owner{}, res.Run.Owner, "a finished run has no owner")

	doc := b.r.Doc(b.ctx, res)
	got, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	docJSON, err := json.Marshal(doc)
	require.NoError(t, err)
	gotJSON, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(gotJSON), string(docJSON), "an execution's document is the stored run's")
	require.Len(t, doc.Steps, 2)
	for i := range doc.Steps { // not in the JSON, but in the Go value
		require.Equal(t, res.Run.ID, doc.Steps[i].RunID)
		require.Equal(t, got.Steps[i].RunID, doc.Steps[i].RunID)
	}
	require.Len(t, got.Steps, 2)
	require.Equal(t, "hi Ada", got.Steps[1].Output["text"])
	require.Equal(t, 1, got.Generation)

	s := compileSchema(t)
	validateDoc(t, s, got)
}

func TestErrorsAreTyped(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.r.Get(b.ctx, "nope")
	require.ErrorIs(t, err, runner.ErrNotFound)
	_, err = b.r.Resume(b.ctx, runner.ResumeRequest{RunID: "nope"})
	require.ErrorIs(t, err, runner.ErrNotFound)

	_, err = b.r.Load(b.write(t, "bad.yaml", "version: 1\nname: bad\nnodes:\n  - {id: a, type: nope}\n"))
	var inv *runner.InvalidError
	require.ErrorAs(t, err, &inv)
	require.NotEmpty(t, inv.Diagnostics)

	w, err := b.r.Load(b.write(t, "chain.yaml", chain))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	_, err = b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.ErrorIs(t, err, runner.ErrCompleted)
	_, err = b.r.Cancel(b.ctx, runner.CancelRequest{RunID: res.Run.ID})
	require.ErrorIs(t, err, runner.ErrNotRunning)

	_, err = b.r.Rerun(b.ctx, runner.RerunRequest{RunID: res.Run.ID, Pins: []string{"zz"}})
	var use *runner.UsageError
	require.ErrorAs(t, err, &use)
	require.Equal(t, `the workflow has no node "zz" to pin`, use.Msg, "said in the request's terms, for the API as for the CLI")

	fails, err := b.r.Load(b.write(t, "fails.yaml", "version: 1\nname: fails\nnodes:\n"+
		"  - {id: a, type: set, values: {x: 1}}\n  - {id: b, type: shell, command: [\"false\"]}\n  - {id: c, type: set, values: {y: 2}}\n"+
		"edges:\n  - {from: a, to: b}\n  - {from: b, to: c}\n"))
	require.NoError(t, err)
	failed, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: fails})
	require.NoError(t, err)
	require.Equal(t, "failed", string(failed.Run.Status))
	_, err = b.r.Rerun(b.ctx, runner.RerunRequest{RunID: failed.Run.ID, Pins: []string{"a", "b", "c"}})
	require.ErrorAs(t, err, &use)
	require.Equal(t, "run "+failed.Run.ID+" has no successful step of b, c to reuse; pin only nodes that succeeded in it", use.Msg)

	_, err = b.r.Prune(b.ctx, runner.PruneRequest{})
	require.True(t, errors.As(err, &use))
}

// TestResumeReusesEveryGeneration: what any earlier execution completed
// is reused, and a resume records a new generation beside the old one.
func TestResumeReusesEveryGeneration(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := filepath.Join(b.dir, "open")
	src := `version: 1
name: gated
nodes:
  - {id: a, type: shell, command: [sh, -c, 'echo a >> "$1"', x, "` + filepath.Join(b.dir, "log") + `"]}
  - {id: gate, type: shell, command: [test, -f, "` + gate + `"]}
edges:
  - {from: a, to: gate}
`
	w, err := b.r.Load(b.write(t, "gated.yaml", src))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))

	again, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "failed", string(again.Run.Status))
	require.Equal(t, 2, again.Run.Generation)

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	last, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "completed", string(last.Run.Status))
	require.Equal(t, 3, last.Run.Generation)
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.True(t, doc.Steps[0].Cached, "a is reused")

	log, err := os.ReadFile(filepath.Join(b.dir, "log"))
	require.NoError(t, err)
	require.Equal(t, "a\n", string(log), "a ran once over three executions")
}

// TestResumeRefusedForItsSecretsLeavesTheRun: a resume that cannot run
// for want of a secret (unset, or a secrets file that cannot be read) is
// refused before it claims the run: the run stays failed, in its
// generation and owned by nobody, so that no other process takes it for
// one left behind and runs its nodes again.
func TestResumeRefusedForItsSecretsLeavesTheRun(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TOKEN": "s3cret"}
	b := setupEnv(t, env)
	r, dir := b.r, b.dir
	w, err := r.Load(b.write(t, "secret.yaml", `version: 1
name: secret
secrets: [TOKEN]
nodes:
  - {id: a, type: shell, command: [sh, -c, 'echo a >> "$1"; exit 1', x, "`+filepath.Join(dir, "log")+`"]}
`))
	require.NoError(t, err)
	res, err := r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))

	delete(env, "TOKEN")
	_, err = r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	var use *runner.UsageError
	require.ErrorAs(t, err, &use)
	require.Contains(t, use.Msg, "TOKEN")
	env["TOKEN"] = "s3cret"
	_, err = r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID, Options: runner.Options{SecretsFile: filepath.Join(dir, "missing.env")}})
	require.Error(t, err)

	doc, err := r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, "failed", string(doc.Status))
	require.Equal(t, 1, doc.Generation)
	require.Nil(t, doc.Owner)
	list, err := r.List(b.ctx, runner.ListRequest{Status: string(runner.StatusInterrupted)})
	require.NoError(t, err)
	require.Empty(t, list, "nothing to take over")

	again, err := r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, 2, again.Run.Generation, "the resume that ran is the second execution")
	log, err := os.ReadFile(filepath.Join(dir, "log"))
	require.NoError(t, err)
	require.Equal(t, "a\na\n", string(log), "a ran in the first execution and the resume that ran, not in the refused ones")
}

// failFinish is a store whose final run records cannot be written (a
// full disk at the last moment).
type failFinish struct {
	store.Store
	on bool
}

func (f *failFinish) SaveBatch(ctx context.Context, bs []store.Batch) error {
	for _, b := range bs {
		if b.Finish != nil && f.on {
			return errors.New("disk full")
		}
	}
	return f.Store.SaveBatch(ctx, bs)
}

// TestAFailedFinalWriteLeavesTheRunResumable: when the last records and
// the final status cannot be written, nothing of them is, and once the
// lease runs out the run is interrupted and resumes.
//
// The lease is an hour long, so no load on the machine runs it out
// before the test means it to; then the test runs it out at once, as the
// owner's silence would (leases are timed by the database's clock, so it
// renews the lease for less than nothing).
func TestAFailedFinalWriteLeavesTheRunResumable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	fs := &failFinish{Store: st, on: true}
	r, err := runner.Open(runner.Config{Dir: dir, Store: fs, LeaseTTL: time.Hour})
	require.NoError(t, err)
	defer r.Close()
	flow := filepath.Join(dir, "chain.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(chain), 0o644))
	w, err := r.Load(flow)
	require.NoError(t, err)

	res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.ErrorContains(t, res.Err, "disk full")
	stored, err := st.Run(t.Context(), res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, "running", string(stored.Status), "no final status without the last records")

	_, err = r.Resume(t.Context(), runner.ResumeRequest{RunID: res.Run.ID})
	require.ErrorIs(t, err, store.ErrOwned, "the lease has not run out yet")
	_, err = st.RenewLease(t.Context(), res.Run.ID, stored.Owner.Token, -time.Second)
	require.NoError(t, err, "the owner still holds the lease: nothing took the run over")
	run, err := st.Run(t.Context(), res.Run.ID)
	require.NoError(t, err)
	require.True(t, run.LeaseExpired)
	list, err := r.List(t.Context(), runner.ListRequest{Status: string(runner.StatusInterrupted)})
	require.NoError(t, err)
	require.Len(t, list, 1)

	fs.on = false
	again, err := r.Resume(t.Context(), runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.NoError(t, again.Err)
	require.Equal(t, "completed", string(again.Run.Status))
}

// TestCancelAnInterruptedRun: a run whose owner is gone is marked
// cancelled at once, and it can still be resumed later.
func TestCancelAnInterruptedRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.CreateRun(t.Context(), &store.Run{ID: "dead", Workflow: "w", Status: "running",
		Owner: store.Owner{Host: "elsewhere", PID: 1, Token: "gone"}, LeaseTTL: -time.Second}))
	r, err := runner.Open(runner.Config{Dir: dir, Store: st})
	require.NoError(t, err)
	defer r.Close()

	list, err := r.List(t.Context(), runner.ListRequest{})
	require.NoError(t, err)
	require.Equal(t, runner.StatusInterrupted, list[0].Status)

	run, err := r.Cancel(t.Context(), runner.CancelRequest{RunID: "dead"})
	require.NoError(t, err)
	require.Equal(t, "cancelled", string(run.Status))
	require.Equal(t, store.Owner{}, run.Owner)
	require.NotNil(t, run.FinishedAt)
}
