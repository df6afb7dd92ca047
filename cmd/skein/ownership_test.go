package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	skeinproc "github.com/skeinhq/skein/internal/proc"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// started runs skein with args and returns once its progress shows the
// run's id, with the process still running.
func started(t *testing.T, args ...string) (cmd *exec.Cmd, runID string, rest *bufio.Scanner) {
	t.Helper()
	cmd = exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = io.Discard
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "▶" {
			return cmd, f[len(f)-3], sc
		}
	}
	t.Fatalf("skein %v printed no run id", args)
	return nil, "", nil
}

type proc struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, args ...string) proc {
	t.Helper()
	return runIn(t, "", args...)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, limit time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf(msg, args...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOneResumeAtATime: two resumes of one failed run at once — exactly
// one proceeds and the other is refused, naming the owner; a live run
// cannot be resumed; a run whose process was killed is interrupted.
func TestOneResumeAtATime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	first := run(t, "run", "--dir", dir, "--output", "json", "testdata/gate.yaml", "-i", "open="+open)
	require.Equal(t, 1, first.code, first.stderr)
	var doc struct {
		ID string `json:"execution_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(first.stdout), &doc))
	require.NoError(t, os.WriteFile(open, nil, 0o644))

	results := make(chan proc, 2)
	for i := 0; i < 2; i++ {
		go func() { results <- run(t, "resume", "--dir", dir, doc.ID) }()
	}
	a, b := <-results, <-results
	if a.code != 0 {
		a, b = b, a
	}
	require.Equal(t, 0, a.code, "one resume proceeds: %s", a.stderr)
	require.Contains(t, a.stdout, "completed")
	require.Equal(t, 1, b.code, "the other is refused: %s", b.stdout)
	require.Contains(t, b.stderr, "run "+doc.ID+" is running in pid ")
	require.Contains(t, b.stderr, "skein cancel "+doc.ID)

	live, id, _ := started(t, "run", "--dir", dir, "testdata/long.yaml")
	r := run(t, "resume", "--dir", dir, id)
	require.Equal(t, 1, r.code, "a live run cannot be resumed")
	require.Contains(t, r.stderr, "is running in pid "+strconv.Itoa(live.Process.Pid))

	require.NoError(t, live.Process.Kill())
	_ = live.Wait()
	l := run(t, "runs", "list", "--dir", dir)
	require.Equal(t, 0, l.code, l.stderr)
	require.Contains(t, l.stdout, id)
	require.Contains(t, l.stdout, "interrupted (skein resume "+id+")")
	l = run(t, "runs", "list", "--dir", dir, "--status", "interrupted")
	require.Contains(t, l.stdout, id)
	require.NotContains(t, l.stdout, doc.ID, "only the interrupted run")
}

// TestKillResumeAnywhere kills `skein run` and then `skein resume` with
// SIGKILL at 30 random instants over a 20-node workflow whose nodes append
// to a file: a node that had completed never writes its line again, and
// the run finally completes.
func TestKillResumeAnywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	t.Logf("seed time %s", time.Now())

	counts := func() map[string]int {
		data, _ := os.ReadFile(log)
		m := map[string]int{}
		for _, l := range strings.Fields(string(data)) {
			m[l]++
		}
		return m
	}
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	defer st.Close()
	completedNodes := func(id string) map[string]bool {
		hist, err := st.StepHistory(context.Background(), id)
		require.NoError(t, err)
		done := map[string]bool{}
		for _, s := range hist {
			if s.Status == "success" {
				done[s.Node] = true
			}
		}
		return done
	}

	cmd, id, _ := started(t, "run", "--dir", dir, "testdata/appender.yaml", "-i", "log="+log)
	frozen := map[string]int{} // completed node → its line count then
	kills := 0
	for kills < 30 {
		time.Sleep(time.Duration(rng.IntN(250)) * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		kills++
		now := counts()
		for n, c := range frozen {
			require.Equal(t, c, now[n], "node %s had completed, yet wrote its line again (kill %d)", n, kills)
		}
		for n := range completedNodes(id) {
			if _, ok := frozen[n]; !ok {
				frozen[n] = now[n]
			}
		}
		cmd = exec.Command(bin, "resume", "--dir", dir, id)
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &errb
		require.NoError(t, cmd.Start())
	}
	_ = cmd.Wait()
	final := run(t, "resume", "--dir", dir, "--output", "json", id)
	if final.code != 0 {
		require.Contains(t, final.stderr, "completed", "the run ends completed: %s", final.stderr)
	}
	show := run(t, "runs", "show", "--dir", dir, "--output", "json", id)
	require.Equal(t, 0, show.code, show.stderr)
	var doc struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &doc))
	require.Equal(t, "completed", string(doc.Status))
	now := counts()
	for n, c := range frozen {
		require.Equal(t, c, now[n], "node %s had completed, yet wrote its line again", n)
	}
	for i := 0; i < 20; i++ {
		require.GreaterOrEqual(t, now["n"+pad(i)], 1, "every node ran")
	}
	require.Equal(t, 30, kills)
	t.Logf("%d kills, %d nodes completed before the last; lines per node %v", kills, len(frozen), now)
}

func pad(i int) string {
	if i < 10 {
		return "0" + strconv.Itoa(i)
	}
	return strconv.Itoa(i)
}

// TestKilledShellLeavesNoOrphan kills `skein run` while a shell node's
// background child sleeps before writing a file: the child dies with skein
// (on Linux, the guardian kills it; elsewhere the resume stops it first),
// so only the re-run node's own child writes.
func TestKilledShellLeavesNoOrphan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, pidFile := filepath.Join(dir, "out"), filepath.Join(dir, "pid")
	cmd, id, _ := started(t, "run", "--dir", dir, "testdata/orphan.yaml", "-i", "out="+out, "-i", "pid="+pidFile)
	var orphan int
	eventually(t, 60*time.Second, func() bool {
		data, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		orphan, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, "the node never started its child")
	require.NoError(t, os.Remove(pidFile))
	// The step's process group is on record before the child can matter.
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	defer st.Close()
	eventually(t, 60*time.Second, func() bool {
		steps, err := st.Steps(context.Background(), id)
		return err == nil && len(steps) == 1 && steps[0].ProcessGroup > 0
	}, "the running step has no process group on record")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	if runtime.GOOS == "linux" {
		eventually(t, 30*time.Second, func() bool { return !skeinproc.Alive(orphan) }, "the sleeping child outlived skein")
	}

	r := run(t, "resume", "--dir", dir, id)
	require.Equal(t, 0, r.code, r.stderr)
	require.False(t, skeinproc.Alive(orphan), "the resume stopped the child the dead run left")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "written\n", string(data), "only the re-run node's child wrote")
}

// TestCancelFromAnotherProcess cancels a run owned by another skein
// process: it stops its node (a sleep of an hour) and ends cancelled.
func TestCancelFromAnotherProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd, id, sc := started(t, "run", "--dir", dir, "testdata/long.yaml")
	for sc.Scan() {
		if strings.Contains(sc.Text(), "start") {
			break
		}
	}
	// A live run is never pruned, however young the cut-off.
	p := run(t, "runs", "prune", "--dir", dir, "--older-than", "1ms")
	require.Equal(t, 0, p.code, p.stderr)
	require.Contains(t, p.stdout, "deleted 0 runs")

	c := run(t, "cancel", "--dir", dir, id)
	require.Equal(t, 0, c.code, c.stderr)
	require.Contains(t, c.stdout, "run "+id+" cancelled")
	require.Equal(t, 130, waitExit(t, cmd, time.Minute), "the run stops its hour-long node")

	show := run(t, "runs", "show", "--dir", dir, "--output", "json", id)
	var doc struct {
		Status string `json:"status"`
		Steps  []struct{ Node, Status string }
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &doc))
	require.Equal(t, "cancelled", string(doc.Status))

	again := run(t, "cancel", "--dir", dir, id)
	require.Equal(t, 2, again.code, "an ended run cannot be cancelled")
	require.Contains(t, again.stderr, "is cancelled")
}

// killedWhileSleeping runs testdata/long.yaml in a new folder and kills
// its process with SIGKILL while its sleep step runs; it returns the
// folder and the run's id.
func killedWhileSleeping(t *testing.T) (dir, id string) {
	t.Helper()
	dir = t.TempDir()
	cmd, id, _ := started(t, "run", "--dir", dir, "testdata/long.yaml")
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	defer st.Close()
	eventually(t, 60*time.Second, func() bool {
		steps, err := st.Steps(context.Background(), id)
		return err == nil && slices.ContainsFunc(steps, func(s *store.Step) bool { return s.Node == "sleep" && s.Status == "running" })
	}, "the sleep step never ran")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	return dir, id
}

// TestShowAKilledRun: runs show of a run whose process was killed while
// its node ran says the run is interrupted and that the node was running
// when it was, with no duration, and does not say the run is running in
// the dead process.
func TestShowAKilledRun(t *testing.T) {
	t.Parallel()
	dir, id := killedWhileSleeping(t)

	show := run(t, "runs", "show", "--dir", dir, id)
	require.Equal(t, 0, show.code, show.stderr)
	require.Contains(t, show.stdout, "interrupted (skein resume "+id+")")
	require.NotContains(t, show.stdout, "running in pid", "the process is gone")
	var line string
	for l := range strings.Lines(show.stdout) {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "sleep" {
			line = l
		}
	}
	require.Contains(t, line, "▸ running when interrupted", show.stdout)
	require.Regexp(t, `when interrupted\s+1\s+-\s`, line, "no duration: the step never ended")
}

// TestCancelAKilledRun: a run whose process was killed while its node ran
// is cancelled by skein cancel, its running step with it: no step of the
// cancelled run is left running.
func TestCancelAKilledRun(t *testing.T) {
	t.Parallel()
	dir, id := killedWhileSleeping(t)

	c := run(t, "cancel", "--dir", dir, id)
	require.Equal(t, 0, c.code, c.stderr)
	show := run(t, "runs", "show", "--dir", dir, "--output", "json", id)
	require.Equal(t, 0, show.code, show.stderr)
	var doc struct {
		Status string `json:"status"`
		Steps  []struct {
			Node, Status string
			Error        *struct{ Message string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &doc))
	require.Equal(t, "cancelled", doc.Status)
	got := map[string]string{}
	for _, s := range doc.Steps {
		got[s.Node] = s.Status
		if s.Node == "sleep" {
			require.NotNil(t, s.Error)
			require.Contains(t, s.Error.Message, "cancelled after the process that ran the step stopped")
		}
	}
	require.Equal(t, map[string]string{"start": "success", "sleep": "cancelled", "after": "cancelled"}, got)

	// The run folder's run.json, "running" when the process died, is the
	// run's document as it ended.
	folders, err := filepath.Glob(filepath.Join(dir, "runs", "long", "*", "run.json"))
	require.NoError(t, err)
	require.Len(t, folders, 1)
	data, err := os.ReadFile(folders[0])
	require.NoError(t, err)
	var file struct {
		Status string `json:"status"`
		Steps  []struct{ Node, Status string }
	}
	require.NoError(t, json.Unmarshal(data, &file))
	require.Equal(t, "cancelled", file.Status)
	require.Len(t, file.Steps, 3)
}

// TestChildRunsAreRuns: a subworkflow's child run is listed and shown like
// any run, and its parent step is waiting while it runs.
func TestChildRunsAreRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd, id, _ := started(t, "run", "--dir", dir, "testdata/parent.yaml")
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	defer st.Close()
	eventually(t, 60*time.Second, func() bool {
		steps, err := st.Steps(context.Background(), id)
		if err != nil {
			return false
		}
		for _, s := range steps {
			if s.Node == "sub" && s.Status == "waiting" {
				return true
			}
		}
		return false
	}, "the parent step was never waiting")
	require.NoError(t, cmd.Wait())

	l := run(t, "runs", "list", "--dir", dir, "--parent", id)
	require.Equal(t, 0, l.code, l.stderr)
	child := id + ".sub1"
	require.Contains(t, l.stdout, child)
	s := run(t, "runs", "show", "--dir", dir, "--output", "json", child)
	require.Equal(t, 0, s.code, s.stderr)
	var doc struct {
		Status   string `json:"status"`
		ParentID string `json:"parent_id"`
		Outputs  map[string]any
		Steps    []struct{ Node, Status string }
	}
	require.NoError(t, json.Unmarshal([]byte(s.stdout), &doc))
	require.Equal(t, "completed", string(doc.Status))
	require.Equal(t, id, doc.ParentID)
	require.Equal(t, "hello", doc.Outputs["said"])
	require.Len(t, doc.Steps, 2)
}

// TestKilledMCPServerLeavesAnInterruptedRun: a `skein mcp` killed while a
// run_workflow call runs leaves that run interrupted, not running for good.
func TestKilledMCPServerLeavesAnInterruptedRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(bin, "mcp", "--dir", dir)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	go func() {
		_, _ = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_workflow",
			Arguments: map[string]any{"file": "testdata/long.yaml"}})
	}()
	var id string
	eventually(t, 60*time.Second, func() bool {
		l := run(t, "runs", "list", "--dir", dir, "--status", "running")
		f := strings.Fields(l.stdout)
		if l.code == 0 && len(f) > 5 {
			id = f[5]
		}
		return id != ""
	}, "the run never started")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	l := run(t, "runs", "list", "--dir", dir)
	require.Contains(t, l.stdout, "interrupted (skein resume "+id+")")
}
