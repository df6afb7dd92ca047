package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// syncBuffer is a buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// worker starts `skein worker` on db; when the test ends it is sent
// SIGTERM and must drain and exit 0.
func worker(t *testing.T, db string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"worker", "--db", db, "--dir", t.TempDir()}, args...)...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			require.NoError(t, err, "the worker did not exit 0 on SIGTERM:\n%s", out.String())
			require.Contains(t, out.String(), "drained")
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("the worker did not stop within 30 s of SIGTERM:\n%s", out.String())
		}
	})
	return cmd, out
}

func pgQuery(t *testing.T, db, sql string, dest ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	require.NoError(t, conn.QueryRow(ctx, sql).Scan(dest...))
}

// fanOutJoin is a workflow of n branches that each take a moment, then a
// join and a node after it.
func fanOutJoin(t *testing.T, n int) string {
	var nodes, edges strings.Builder
	for i := range n {
		fmt.Fprintf(&nodes, "  - {id: b%d, type: shell, command: [sh, -c, 'sleep 0.2; echo {\"i\": %d}']}\n", i, i)
		fmt.Fprintf(&edges, "  - {from: start, to: b%d}\n  - {from: b%d, to: join}\n", i, i)
	}
	src := fmt.Sprintf(`version: 1
name: fan
nodes:
  - {id: start, type: trigger.manual}
%s  - {id: join, type: merge}
  - {id: total, type: set, values: {branches: "{{ len(join.inputs) }}"}}
edges:
%s  - {from: join, to: total}
outputs:
  branches: "{{ total.branches }}"
`, nodes.String(), edges.String())
	file := filepath.Join(t.TempDir(), "fan.yaml")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o600))
	return file
}

// TestQueuedRunsOnTwoWorkers: two `skein worker` processes run the nodes
// of `skein run --queue`, which shows the usual progress and exit codes; a
// join after a fan-out fires exactly once; both workers take part.
func TestQueuedRunsOnTwoWorkers(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	mig := run(t, "migrate", "--db", db)
	require.Equal(t, 0, mig.code, mig.stderr)
	require.Contains(t, mig.stdout, "applied River queue migrations")
	w1, _ := worker(t, db, "--concurrency", "4")
	w2, _ := worker(t, db, "--concurrency", "4")

	hello := run(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), "../../examples/hello.yaml", "-i", "who=Ada")
	require.Equal(t, 0, hello.code, hello.stdout+hello.stderr)
	require.Contains(t, hello.stdout, "✓ greet")
	require.Contains(t, hello.stdout, "Hello, Ada!")

	const n = 16
	fan := run(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), "--output", "json", fanOutJoin(t, n))
	require.Equal(t, 0, fan.code, fan.stdout+fan.stderr)
	var doc struct {
		ID      string         `json:"execution_id"`
		Status  string         `json:"status"`
		Outputs map[string]any `json:"outputs"`
		Steps   []struct{ Node, Status string }
	}
	require.NoError(t, json.Unmarshal([]byte(fan.stdout), &doc), fan.stdout)
	require.Equal(t, "completed", string(doc.Status))
	require.EqualValues(t, n, doc.Outputs["branches"])
	joins := 0
	for _, s := range doc.Steps {
		if s.Node == "join" {
			joins++
			require.Equal(t, "success", string(s.Status))
		}
	}
	require.Equal(t, 1, joins, "the join has one step")
	require.Len(t, doc.Steps, n+3)
	var started int
	pgQuery(t, db, fmt.Sprintf(`SELECT count(*) FROM events WHERE run_id = '%s' AND type = 'node_started' AND node = 'join'`, doc.ID), &started)
	require.Equal(t, 1, started, "the join started once")
	var workers int
	pgQuery(t, db, fmt.Sprintf(`SELECT count(DISTINCT ran_worker) FROM steps WHERE run_id = '%s' AND ran_worker <> ''`, doc.ID), &workers)
	require.Equal(t, 2, workers, "both workers ran nodes of the fan-out")

	failing := filepath.Join(t.TempDir(), "fails.yaml")
	require.NoError(t, os.WriteFile(failing, []byte("version: 1\nname: fails\nnodes:\n  - {id: boom, type: shell, command: [sh, -c, 'exit 3']}\n"), 0o600))
	bad := run(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), failing)
	require.Equal(t, 1, bad.code, "a failed run exits 1: %s", bad.stdout+bad.stderr)
	require.Contains(t, bad.stdout, "✗ boom")
	checks := run(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), "../../examples/checks.yaml")
	require.Equal(t, 0, checks.code, checks.stdout+checks.stderr)
	require.Contains(t, checks.stdout, "PASSED · 6 passed", "the checks of a queued run run when it ends")
	noPassword(t, mig, hello, fan, bad, checks)
	_, _ = w1, w2
}

// TestQueuedRunWaitsForAWorker: on Postgres the nodes go to the queue by
// default; with no worker, skein run says so, and goes on when one starts.
func TestQueuedRunWaitsForAWorker(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	cmd := exec.Command(bin, "run", "--db", db, "--dir", t.TempDir(), "../../examples/hello.yaml")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	sc := bufio.NewScanner(stdout)
	var out strings.Builder
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "waiting for a worker") {
			break
		}
	}
	require.Contains(t, out.String(), "waiting for a worker: start skein worker --db")
	require.NotContains(t, out.String(), pgPassword)
	worker(t, db)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	require.NoError(t, cmd.Wait(), out.String())
	require.Contains(t, out.String(), "Hello, world!")
}

// TestCancelQueuedRun: skein cancel from another process cancels a queued
// run whose node is running on a worker: nothing after it starts, and
// skein run --queue exits 130.
func TestCancelQueuedRun(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	worker(t, db)
	flow := filepath.Join(t.TempDir(), "nap.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: nap
nodes:
  - {id: start, type: trigger.manual}
  - {id: nap, type: wait, duration: 1h}
  - {id: after, type: set, values: {y: 2}}
edges:
  - {from: start, to: nap}
  - {from: nap, to: after}
`), 0o600))
	cmd, id, _ := started(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), flow)
	c := run(t, "cancel", "--db", db, id)
	require.Equal(t, 0, c.code, c.stderr)
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 130, ee.ExitCode())
	show := run(t, "runs", "show", "--db", db, "--output", "json", id)
	var doc struct {
		Status string
		Steps  []struct{ Node, Status string }
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &doc), show.stdout)
	require.Equal(t, "cancelled", string(doc.Status))
	for _, s := range doc.Steps {
		if s.Node == "after" {
			require.Equal(t, "cancelled", string(s.Status), "never started because of the cancel")
		}
	}
}

// TestWorkerDrains: SIGTERM lets the running node finish before the
// worker exits; the run completes.
func TestWorkerDrains(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	w, out := worker(t, db)
	flow := filepath.Join(t.TempDir(), "slow.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: slow
nodes:
  - {id: slow, type: shell, command: [sh, -c, 'sleep 1; echo done']}
`), 0o600))
	cmd, _, sc := started(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), flow)
	eventually(t, 60*time.Second, func() bool {
		var running int
		pgQuery(t, db, `SELECT count(*) FROM river_job WHERE state = 'running'`, &running)
		return running == 1
	}, "the node never started on the worker")
	require.NoError(t, w.Process.Signal(syscall.SIGTERM))
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	require.NoError(t, cmd.Wait(), rest.String())
	require.Contains(t, rest.String(), "✓ slow")
	eventually(t, 60*time.Second, func() bool { return strings.Contains(out.String(), "drained") }, "the worker did not drain:\n%s", out.String())
	// Its stderr is not a terminal: every line is a JSON log record, the
	// first and the last too, for a log collector.
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		require.True(t, json.Valid([]byte(line)), "not a JSON log line: %s", line)
	}
}

// TestResumeQueuedRun: a queued run that failed is resumed by skein
// resume, which reuses the steps the workers completed and runs the rest
// in its own process.
func TestResumeQueuedRun(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	worker(t, db)
	dir := t.TempDir()
	flag := filepath.Join(t.TempDir(), "ready")
	flow := filepath.Join(t.TempDir(), "fixable.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(fmt.Sprintf(`version: 1
name: fixable
nodes:
  - {id: first, type: set, values: {x: 1}}
  - {id: check, type: shell, command: [test, -f, %q]}
edges:
  - {from: first, to: check}
`, flag)), 0o600))
	failed := run(t, "run", "--db", db, "--queue", "--dir", dir, flow)
	require.Equal(t, 1, failed.code, failed.stdout+failed.stderr)
	require.Contains(t, failed.stdout, "✗ check")
	var id string
	for _, line := range strings.Split(failed.stdout, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "▶" {
			id = f[2]
		}
	}
	require.NotEmpty(t, id)
	require.NoError(t, os.WriteFile(flag, nil, 0o600))
	resumed := run(t, "resume", "--db", db, "--dir", dir, id)
	require.Equal(t, 0, resumed.code, resumed.stdout+resumed.stderr)
	require.Regexp(t, `↻ first\s.*cached`, resumed.stdout, "the step the worker completed is reused")
	require.Contains(t, resumed.stdout, "✓ check")
}

// TestQueuedApproval: skein run --queue of a run that waits for a signal
// ends with exit 4 and says how to send it, as skein run does; skein
// signal reaches the workers, which complete the run.
func TestQueuedApproval(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	worker(t, db)
	waiting := run(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), "../../examples/approval.yaml")
	require.Equal(t, 4, waiting.code, waiting.stdout+waiting.stderr)
	var id string
	for _, line := range strings.Split(waiting.stdout, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "▶" {
			id = f[2]
		}
	}
	require.Contains(t, waiting.stdout, "approve waits for a signal: skein signal "+id+" approve")
	// Another folder than the run's: with --db the runs are in the
	// database, wherever --dir points (it need not exist).
	other := filepath.Join(t.TempDir(), "elsewhere")
	sig := run(t, "signal", "--db", db, "--dir", other, id, "approve", "--data", `{"approved": true, "by": "Grace"}`)
	require.Equal(t, 0, sig.code, sig.stdout+sig.stderr)
	require.Contains(t, sig.stdout+sig.stderr, "river queue applies it")
	eventually(t, 30*time.Second, func() bool {
		show := run(t, "runs", "show", "--db", db, "--dir", other, "--output", "json", id)
		var doc struct {
			Status  string
			Outputs map[string]any
		}
		return json.Unmarshal([]byte(show.stdout), &doc) == nil && doc.Status == "completed" &&
			strings.Contains(fmt.Sprint(doc.Outputs["result"]), "approved by Grace")
	}, "the signalled run did not complete")
}

// TestQueuedSubworkflowBudget: a subworkflow on a worker spends from its
// parent's budget, and the parent run counts what the child spent (the
// child ran with its own budget only, and the parent recorded 0 tokens).
func TestQueuedSubworkflowBudget(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	worker(t, db)
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: "one", Usage: llm.Usage{InputTokens: 350, OutputTokens: 350, TotalTokens: 700}},
		{Text: "two", Usage: llm.Usage{InputTokens: 350, OutputTokens: 350, TotalTokens: 700}},
		{Text: "three", Usage: llm.Usage{InputTokens: 350, OutputTokens: 350, TotalTokens: 700}},
	})
	flows := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(flows, "child.yaml"), []byte(`version: 1
name: child
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "`+model.BaseURL()+`", api_key: test}
nodes:
  - {id: a, type: llm, prompt: one}
  - {id: b, type: llm, prompt: two}
  - {id: c, type: llm, prompt: three}
edges:
  - {from: a, to: b}
  - {from: b, to: c}
`), 0o600))
	parent := filepath.Join(flows, "parent.yaml")
	require.NoError(t, os.WriteFile(parent, []byte(`version: 1
name: parent
limits: {max_tokens: 1000}
nodes:
  - {id: sub, type: subworkflow, workflow: child.yaml}
`), 0o600))
	res := run(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), "-o", "json", parent)
	require.Equal(t, 1, res.code, res.stdout+res.stderr)
	var doc struct {
		Status string `json:"status"`
		Tokens int    `json:"tokens"`
		Steps  []struct {
			Node   string `json:"node"`
			Status string `json:"status"`
			Error  *struct {
				Category string `json:"category"`
				Message  string `json:"message"`
			} `json:"error"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res.stdout)
	require.Equal(t, "failed", string(doc.Status))
	require.Equal(t, 2, model.Calls(), "the third call is refused: the parent's budget is spent")
	require.Equal(t, 1400, doc.Tokens, "the parent run counts what its child spent")
	require.Len(t, doc.Steps, 1)
	require.NotNil(t, doc.Steps[0].Error)
	require.Equal(t, "budget_exceeded", doc.Steps[0].Error.Category, doc.Steps[0].Error.Message)
	require.Contains(t, doc.Steps[0].Error.Message, "the parent run's token budget is spent")
}

// TestSubworkflowParentWaits: the parent step of a subworkflow is waiting
// while its child runs, and the run is running, on the queue as in a
// local run (DESIGN §2.7, docs/running.md); the step succeeds when the
// child ends.
func TestSubworkflowParentWaits(t *testing.T) {
	t.Parallel()
	flows := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(flows, "child.yaml"), []byte(`version: 1
name: child
inputs:
  gate: {type: string, required: true}
nodes:
  - {id: hold, type: shell, command: [sh, -c, 'while [ ! -e "$0" ]; do sleep 0.02; done', "{{ inputs.gate }}"]}
  - {id: say, type: set, values: {said: hello}}
edges:
  - {from: hold, to: say}
outputs:
  said: "{{ say.said }}"
`), 0o600))
	parent := filepath.Join(flows, "parent.yaml")
	require.NoError(t, os.WriteFile(parent, []byte(`version: 1
name: parent
inputs:
  gate: {type: string, required: true}
nodes:
  - {id: sub, type: subworkflow, workflow: child.yaml, inputs: {gate: "{{ inputs.gate }}"}}
outputs:
  said: "{{ sub.said }}"
`), 0o600))
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	worker(t, db)
	for _, tc := range []struct {
		name     string
		db, mode []string
	}{
		{name: "local"},
		{name: "queue", db: []string{"--db", db}, mode: []string{"--queue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			where := append([]string{"--dir", t.TempDir()}, tc.db...)
			gate := filepath.Join(t.TempDir(), "gate")
			args := append(append(append([]string{"run"}, where...), tc.mode...), parent, "-i", "gate="+gate)
			cmd, id, _ := started(t, args...)
			type doc struct {
				Status string `json:"status"`
				Steps  []struct{ Node, Status string }
			}
			show := func() doc {
				s := run(t, append(append([]string{"runs", "show"}, where...), "--output", "json", id)...)
				require.Equal(t, 0, s.code, s.stderr)
				var d doc
				require.NoError(t, json.Unmarshal([]byte(s.stdout), &d), s.stdout)
				return d
			}
			var d doc
			eventually(t, 60*time.Second, func() bool {
				d = show()
				return len(d.Steps) == 1 && d.Steps[0].Status == "waiting"
			}, "the parent step was never waiting while its child ran")
			require.Equal(t, "running", string(d.Status), "the run runs while its step waits for the child")
			require.NoError(t, os.WriteFile(gate, nil, 0o600))
			require.NoError(t, cmd.Wait())
			d = show()
			require.Equal(t, "completed", string(d.Status))
			require.Equal(t, "success", string(d.Steps[0].Status))
		})
	}
}

// TestQueuedChildApproval: a queued run's child (or the child's own
// child) that waits for a signal waits in the worker that runs its
// subworkflow node; skein signal of the child run reaches it there, and
// the run completes with the child's outputs.
func TestQueuedChildApproval(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	worker(t, db)
	approval, err := os.ReadFile("../../examples/approval.yaml")
	require.NoError(t, err)
	for _, tc := range []struct{ child, waits string }{{"approval.yaml", ".sub1"}, {"mid.yaml", ".sub1.deeper1"}} {
		t.Run(tc.child, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "approval.yaml"), approval, 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "mid.yaml"), []byte(`version: 1
name: mid
nodes:
  - {id: deeper, type: subworkflow, workflow: approval.yaml}
outputs:
  result: "{{ deeper.result }}"
`), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "parent.yaml"), []byte(`version: 1
name: parent
nodes:
  - {id: sub, type: subworkflow, workflow: `+tc.child+`}
outputs:
  result: "{{ sub.result }}"
`), 0o600))
			cmd, id, _ := started(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), filepath.Join(dir, "parent.yaml"))
			var sig proc
			eventually(t, 60*time.Second, func() bool {
				sig = run(t, "signal", "--db", db, id+tc.waits, "approve", "--data", `{"approved": true, "by": "Grace"}`)
				return sig.code == 0
			}, "the child's approve never took the signal")
			require.Equal(t, 0, waitExit(t, cmd, 60*time.Second), sig.stdout+sig.stderr)
			show := run(t, "runs", "show", "--db", db, "--output", "json", id)
			var doc struct {
				Status  string
				Outputs map[string]any
			}
			require.NoError(t, json.Unmarshal([]byte(show.stdout), &doc), show.stdout)
			require.Equal(t, "completed", doc.Status)
			require.Equal(t, "To team@example.com: the release is ready. (approved by Grace)", doc.Outputs["result"])
		})
	}
}

// TestQueuedRetryIsOneLine: a node that fails once and succeeds when it
// is tried again shows, on the queue as locally, its retry line and its
// end — not a ✗ for the attempt that was retried.
func TestQueuedRetryIsOneLine(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	worker(t, db)
	dir := t.TempDir()
	flag := filepath.Join(dir, "tried")
	flow := filepath.Join(dir, "flaky.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(fmt.Sprintf(`version: 1
name: flaky
nodes:
  - {id: a, type: shell, command: [sh, -c, 'if [ -e %s ]; then echo ok; else touch %s; exit 5; fi'], retries: 2, retry_backoff: 100ms}
`, flag, flag)), 0o600))
	r := run(t, "run", "--db", db, "--queue", "--dir", dir, flow)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "↻ a")
	require.Regexp(t, `✓ a\s+shell\s+\S+\s+after 2 attempts`, r.stdout)
	require.NotContains(t, r.stdout, "✗", "the retried attempt is not the node's end:\n%s", r.stdout)
	// The last line names the run's folder only when there is one.
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) >= 6 && f[0] == "run" && f[2] == "completed" {
			_, err := os.Stat(f[len(f)-1])
			require.NoError(t, err, "the folder the run's line names: %s", line)
		}
	}
}
