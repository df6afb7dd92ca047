package main_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	skeinproc "github.com/skeinhq/skein/internal/proc"
)

// cancelDoc is what the cancel tests read of a run.
type cancelDoc struct {
	Status string `json:"status"`
	Steps  []struct {
		Node       string         `json:"node"`
		Status     string         `json:"status"`
		SkipReason string         `json:"skip_reason"`
		Output     map[string]any `json:"output"`
		StartedAt  *string        `json:"started_at"`
		RanOn      map[string]any `json:"ran_on"`
	} `json:"steps"`
}

func (d cancelDoc) step(node string) (status string, output map[string]any) {
	for _, s := range d.Steps {
		if s.Node == node {
			status, output = s.Status, s.Output
		}
	}
	return status, output
}

// cancelledUnstarted asserts node's step never started because of the
// cancel: it is cancelled, not skipped, without a start time or a place.
func (d cancelDoc) cancelledUnstarted(t *testing.T, node string) {
	t.Helper()
	for _, s := range d.Steps {
		if s.Node == node {
			require.Equal(t, "cancelled", string(s.Status), node)
			require.Empty(t, s.SkipReason, node)
			require.Nil(t, s.StartedAt, "%s never started", node)
			require.Nil(t, s.RanOn, "%s ran nowhere", node)
			return
		}
	}
	t.Fatalf("no step of %s", node)
}

func showRun(t *testing.T, args ...string) cancelDoc {
	t.Helper()
	show := run(t, append([]string{"runs", "show", "--output", "json"}, args...)...)
	require.Equal(t, 0, show.code, show.stderr)
	var doc cancelDoc
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &doc), show.stdout)
	return doc
}

func getRun(t *testing.T, base, id string) cancelDoc {
	t.Helper()
	resp, err := http.Get(base + "/api/runs/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var doc cancelDoc
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	return doc
}

func post(t *testing.T, url, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var doc map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	require.Less(t, resp.StatusCode, 300, "%s: %v", url, doc)
	return doc
}

// pidIn waits for the pid a shell node wrote to file.
func pidIn(t *testing.T, file string) int {
	t.Helper()
	var pid int
	eventually(t, 60*time.Second, func() bool {
		data, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, "the shell node never started")
	return pid
}

// waitExit waits for a skein process to exit and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(limit):
		t.Fatalf("skein did not exit within %s", limit)
		return -1
	}
}

// TestCancelLetFinish: `skein cancel --let-finish` (API: {"let_finish":
// true}) lets the running node finish, recorded success; nothing new
// starts, the node after it is skipped and the run ends cancelled — the
// same on `skein run`, on `skein serve` (SQLite, default flags) and on the
// queue (serve + a worker on Postgres).
func TestCancelLetFinish(t *testing.T) {
	t.Parallel()
	flows := t.TempDir()
	src, err := os.ReadFile("testdata/letfinish.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(flows, "letfinish.yaml"), src, 0o600))

	// Each set-up starts the run and returns how to cancel it (letting
	// running nodes finish), how to read it, and how to see it end.
	type setUp func(t *testing.T, pid, gate string) (cancel func(), read func() cancelDoc, ended func() string)
	served := func(args ...string) setUp {
		return func(t *testing.T, pid, gate string) (func(), func() cancelDoc, func() string) {
			base := serveProcess(t, append([]string{"--workflows", flows, "--dir", t.TempDir()}, args...)...)
			started := post(t, base+"/api/workflows/letfinish/runs", `{"inputs": {"pid": "`+pid+`", "gate": "`+gate+`"}}`)
			id := started["execution_id"].(string)
			read := func() cancelDoc { return getRun(t, base, id) }
			return func() { post(t, base+"/api/runs/"+id+"/cancel", `{"let_finish": true}`) }, read, func() string { return read().Status }
		}
	}
	for name, up := range map[string]setUp{
		"run": func(t *testing.T, pid, gate string) (func(), func() cancelDoc, func() string) {
			dir := t.TempDir()
			cmd, id, _ := started(t, "run", "--dir", dir, filepath.Join(flows, "letfinish.yaml"), "-i", "pid="+pid, "-i", "gate="+gate)
			cancel := func() {
				c := run(t, "cancel", "--dir", dir, "--let-finish", "--wait=false", id)
				require.Equal(t, 0, c.code, c.stderr)
			}
			ended := func() string {
				require.Equal(t, 130, waitExit(t, cmd, 60*time.Second), "skein run exits 130")
				return showRun(t, "--dir", dir, id).Status
			}
			return cancel, func() cancelDoc { return showRun(t, "--dir", dir, id) }, ended
		},
		"serve": served(),
		"queue": func(t *testing.T, pid, gate string) (func(), func() cancelDoc, func() string) {
			db := pgURL(t)
			require.Equal(t, 0, run(t, "migrate", "--db", db).code)
			worker(t, db)
			return served("--db", db, "--queue")(t, pid, gate)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile, gate := filepath.Join(dir, "pid"), filepath.Join(dir, "gate")
			cancel, read, ended := up(t, pidFile, gate)
			pid := pidIn(t, pidFile)
			cancel()
			// The owner took the cancel: the hour's wait stopped at once.
			eventually(t, 30*time.Second, func() bool {
				st, _ := read().step("nap")
				return st == "cancelled"
			}, "the cancel never reached the run's owner")
			require.True(t, skeinproc.Alive(pid), "the running node goes on")
			doc := read()
			st, _ := doc.step("slow")
			require.Equal(t, "running", st)
			require.Equal(t, "running", string(doc.Status), "the run waits for its running node")

			require.NoError(t, os.WriteFile(gate, nil, 0o600))
			eventually(t, 60*time.Second, func() bool {
				s := read().Status
				return s != "running"
			}, "the run did not end")
			require.Equal(t, "cancelled", ended())
			doc = read()
			st, out := doc.step("slow")
			require.Equal(t, "success", st, "the running node finished and was recorded")
			require.Equal(t, map[string]any{"done": true}, out["json"])
			doc.cancelledUnstarted(t, "after") // nothing new started
		})
	}
}

// TestCancelStopsTheNodeOnAWorker: `skein cancel` of a queued run whose
// shell node runs on a worker stops it there — its process is gone and
// its step is cancelled — and `skein run` exits 130.
func TestCancelStopsTheNodeOnAWorker(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	worker(t, db)
	dir := t.TempDir()
	pidFile, gate := filepath.Join(dir, "pid"), filepath.Join(dir, "gate")
	cmd, id, _ := started(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), "testdata/letfinish.yaml",
		"-i", "pid="+pidFile, "-i", "gate="+gate)
	pid := pidIn(t, pidFile)

	c := run(t, "cancel", "--db", db, id)
	require.Equal(t, 0, c.code, c.stderr)
	require.Contains(t, c.stdout, "run "+id+" cancelled")
	require.Equal(t, 130, waitExit(t, cmd, 60*time.Second))
	eventually(t, 30*time.Second, func() bool { return !skeinproc.Alive(pid) }, "the node's process outlived the cancel")
	doc := showRun(t, "--db", db, id)
	require.Equal(t, "cancelled", string(doc.Status))
	st, _ := doc.step("slow")
	require.Equal(t, "cancelled", st, "the running node was stopped")
	doc.cancelledUnstarted(t, "after")
}

// TestCtrlCWithNoWorker: `skein run` of a queued run that no worker takes
// ends at the first Ctrl-C (or SIGTERM): exit 130, the run cancelled, no
// job of it left for a worker.
func TestCtrlCWithNoWorker(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			db := pgURL(t)
			require.Equal(t, 0, run(t, "migrate", "--db", db).code)
			dir := t.TempDir()
			cmd, id, _ := started(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), "testdata/letfinish.yaml",
				"-i", "pid="+filepath.Join(dir, "pid"), "-i", "gate="+filepath.Join(dir, "gate"))
			require.NoError(t, cmd.Process.Signal(sig))
			require.Equal(t, 130, waitExit(t, cmd, 60*time.Second), "skein run exits 130 at the first signal")
			doc := showRun(t, "--db", db, id)
			require.Equal(t, "cancelled", string(doc.Status))
			doc.cancelledUnstarted(t, "slow")
			doc.cancelledUnstarted(t, "after")
			var left int
			pgQuery(t, db, `SELECT count(*) FROM river_job WHERE state IN ('available', 'scheduled', 'retryable', 'pending', 'running')`, &left)
			require.Zero(t, left, "no job of the run is left for a worker")
		})
	}
}

// TestCtrlCOnAQueuedRun: Ctrl-C on `skein run` of a queued run does what
// it does on a local run: the first lets the node running on a worker go
// on, the second has the worker stop it (its process is gone, its step
// cancelled); skein run exits 130.
func TestCtrlCOnAQueuedRun(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	worker(t, db)
	dir := t.TempDir()
	pidFile, gate := filepath.Join(dir, "pid"), filepath.Join(dir, "gate")
	cmd := exec.Command(bin, "run", "--db", db, "--queue", "--dir", t.TempDir(), "testdata/letfinish.yaml",
		"-i", "pid="+pidFile, "-i", "gate="+gate)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var id string
	sc := bufio.NewScanner(stdout)
	for id == "" && sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "▶" {
			id = f[len(f)-3]
		}
	}
	require.NotEmpty(t, id)
	go func() {
		for sc.Scan() {
		}
	}()
	pid := pidIn(t, pidFile)

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	eventually(t, 30*time.Second, func() bool {
		st, _ := showRun(t, "--db", db, id).step("nap")
		return st == "cancelled"
	}, "the first Ctrl-C did not cancel the run:\n%s", stderr.String())
	require.True(t, skeinproc.Alive(pid), "the first Ctrl-C lets the running node go on")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 130, waitExit(t, cmd, 60*time.Second), stderr.String())
	eventually(t, 30*time.Second, func() bool { return !skeinproc.Alive(pid) }, "the node's process outlived the second Ctrl-C")
	doc := showRun(t, "--db", db, id)
	require.Equal(t, "cancelled", string(doc.Status))
	st, _ := doc.step("slow")
	require.Equal(t, "cancelled", st, "the second Ctrl-C stopped the running node")
	doc.cancelledUnstarted(t, "after")
}

// TestAPICancelWithNoWorker: POST /api/runs/{id}/cancel of a queued run
// that no worker took answers with the run cancelled, at once (no ?wait).
func TestAPICancelWithNoWorker(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	flows := t.TempDir()
	src, err := os.ReadFile("testdata/letfinish.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(flows, "letfinish.yaml"), src, 0o600))
	base := serveProcess(t, "--db", db, "--queue", "--workflows", flows, "--dir", t.TempDir())
	dir := t.TempDir()
	started := post(t, base+"/api/workflows/letfinish/runs",
		`{"inputs": {"pid": "`+filepath.Join(dir, "pid")+`", "gate": "`+filepath.Join(dir, "gate")+`"}}`)
	id := started["execution_id"].(string)

	doc := post(t, base+"/api/runs/"+id+"/cancel", "")
	require.Equal(t, "cancelled", doc["status"], "the answer is the run, cancelled")
	require.NotNil(t, doc["finished_at"])
	got := getRun(t, base, id)
	got.cancelledUnstarted(t, "slow")
	got.cancelledUnstarted(t, "after")
	var left int
	pgQuery(t, db, `SELECT count(*) FROM river_job WHERE state IN ('available', 'scheduled', 'retryable', 'pending', 'running')`, &left)
	require.Zero(t, left, "no job of the run is left for a worker")
}

// TestCancelStopsAQueuedSubworkflow: `skein cancel` of a queued run whose
// subworkflow node runs a child run on a worker stops the child's running
// node too (its process is gone), as a local child's is stopped; so does
// it when the node runs in the child's own child.
func TestCancelStopsAQueuedSubworkflow(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", db).code)
	worker(t, db)
	for _, child := range []string{"inner.yaml", "mid.yaml"} {
		t.Run(child, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "nest.yaml"), []byte(`version: 1
name: nest
inputs:
  pid: {type: string, required: true}
nodes:
  - {id: sub, type: subworkflow, workflow: `+child+`, inputs: {pid: "{{ inputs.pid }}"}}
  - {id: after, type: set, values: {x: 1}}
edges:
  - {from: sub, to: after}
`), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "mid.yaml"), []byte(`version: 1
name: mid
inputs:
  pid: {type: string, required: true}
nodes:
  - {id: deeper, type: subworkflow, workflow: inner.yaml, inputs: {pid: "{{ inputs.pid }}"}}
`), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "inner.yaml"), []byte(`version: 1
name: inner
inputs:
  pid: {type: string, required: true}
nodes:
  - id: slow
    type: shell
    command: [sh, -c, 'echo $$ > "$PID.tmp"; mv "$PID.tmp" "$PID"; sleep 300']
    env: {PID: "{{ inputs.pid }}"}
`), 0o600))
			pidFile := filepath.Join(dir, "pid")
			cmd, id, _ := started(t, "run", "--db", db, "--queue", "--dir", t.TempDir(), filepath.Join(dir, "nest.yaml"), "-i", "pid="+pidFile)
			pid := pidIn(t, pidFile)

			c := run(t, "cancel", "--db", db, id)
			require.Equal(t, 0, c.code, c.stderr)
			require.Equal(t, 130, waitExit(t, cmd, 60*time.Second))
			eventually(t, 30*time.Second, func() bool { return !skeinproc.Alive(pid) }, "the child's node outlived the cancel")
			doc := showRun(t, "--db", db, id)
			require.Equal(t, "cancelled", string(doc.Status))
			st, _ := doc.step("sub")
			require.Equal(t, "cancelled", st, "the subworkflow node was stopped")
			doc.cancelledUnstarted(t, "after")
		})
	}
}

// TestCancelDuringARetryWaitIsShown: a node cancelled while it waits to
// be tried again ends with the attempt that failed (docs/running.md), and
// skein run's output shows it so, with a ✗ line, not nothing.
func TestCancelDuringARetryWaitIsShown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "failb.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: failb
nodes:
  - {id: f, type: shell, command: [sh, -c, 'exit 3'], retries: 1, retry_backoff: 1h}
  - {id: after, type: set, values: {x: 1}}
edges:
  - {from: f, to: after}
`), 0o600))
	cmd, id, sc := started(t, "run", "--dir", dir, flow)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "↻ f") {
			break
		}
	}
	c := run(t, "cancel", "--dir", dir, id)
	require.Equal(t, 0, c.code, c.stdout+c.stderr)
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	_ = cmd.Wait()
	require.Regexp(t, `(?m)^✗ f\s+shell`, rest.String(), "the node's end is its failed attempt")
}
