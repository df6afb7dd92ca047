package main_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/skeinbin"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skein-bin")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "skein")
	if err := skeinbin.Build(bin); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestCtrlCCancels sends SIGINT to a running `skein run` and checks the run
// ends cancelled with exit 130 and a complete run folder.
func TestCtrlCCancels(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--dir", dir, "testdata/slow.yaml")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "start") {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	// The wait is an hour: the run ended because the signal stopped it.
	require.Equal(t, 130, ee.ExitCode(), strings.Join(lines, "\n"))

	runs, err := filepath.Glob(filepath.Join(dir, "runs", "slow", "*", "run.json"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	data, err := os.ReadFile(runs[0])
	require.NoError(t, err)
	var res struct {
		Status     string `json:"status"`
		FinishedAt string `json:"finished_at"`
		Steps      []struct {
			Node, Status string
			Output       map[string]any `json:"output"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(data, &res))
	require.Equal(t, "cancelled", string(res.Status))
	require.NotEmpty(t, res.FinishedAt)
	statuses := map[string]string{}
	for _, s := range res.Steps {
		statuses[s.Node] = s.Status
	}
	require.Equal(t, "success", statuses["start"])
	require.Equal(t, "cancelled", statuses["nap"], "the wait was stopped")
	require.Equal(t, "cancelled", statuses["after"], "never started because of the cancel")
	for _, s := range res.Steps {
		if s.Node == "nap" {
			require.NotContains(t, s.Output, "waited_ms", "a stopped wait does not claim it waited")
		}
	}
	events, err := os.ReadFile(filepath.Join(filepath.Dir(runs[0]), "events.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(events), `"execution_finished"`)
}

// TestKillThenResume kills `skein run` with SIGKILL while a slow node runs,
// then resumes the run: it completes, and the nodes that had completed
// before the kill ran exactly once.
func TestKillThenResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, marker := filepath.Join(dir, "log"), filepath.Join(dir, "marker")
	cmd := exec.Command(bin, "run", "--dir", dir, "testdata/killme.yaml", "-i", "log="+log, "-i", "marker="+marker)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	runID := ""
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "▶" {
			runID = f[2]
		}
		if strings.HasPrefix(line, "✓ b") {
			break
		}
	}
	require.NotEmpty(t, runID)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	out, err := exec.Command(bin, "resume", "--dir", dir, "--output", "json", runID).Output()
	require.NoError(t, err, string(out))
	var res struct {
		ID     string `json:"execution_id"`
		Status string `json:"status"`
		Steps  []struct {
			Node   string `json:"node"`
			Cached bool   `json:"cached"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	require.Equal(t, runID, res.ID)
	require.Equal(t, "completed", string(res.Status))
	cached := map[string]bool{}
	for _, s := range res.Steps {
		cached[s.Node] = s.Cached
	}
	require.True(t, cached["a"])
	require.True(t, cached["b"])
	require.False(t, cached["c"])

	data, err := os.ReadFile(log)
	require.NoError(t, err)
	lines := strings.Fields(string(data))
	count := map[string]int{}
	for _, l := range lines {
		count[l]++
	}
	require.Equal(t, 1, count["a"], "a ran once: %v", lines)
	require.Equal(t, 1, count["b"], "b ran once: %v", lines)
	require.Equal(t, 1, count["c"], "c ran once: %v", lines)
	require.GreaterOrEqual(t, count["s"], 1, "slow ran at least once (again after the kill when it had started)")
}

// TestSecondCtrlCStopsRunningNodes: the first SIGINT lets a running shell
// command go on, the second stops it at once and the run ends cancelled.
func TestSecondCtrlCStopsRunningNodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--dir", dir, "testdata/long.yaml")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "start") {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	errs := bufio.NewScanner(stderr)
	for errs.Scan() {
		if strings.Contains(errs.Text(), "cancelling") {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for sc.Scan() {
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 130, ee.ExitCode(), "the sleep of an hour was stopped")
}

// TestKillAfterABigStep kills `skein run` with SIGKILL once a step with a
// 5 MB output is shown done: its blob is on disk with the step, so the
// resume reuses the step (it does not run again) and the node after it
// reads the exact bytes.
func TestKillAfterABigStep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--dir", dir, "testdata/bigkill.yaml", "-i", "dir="+dir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	runID := ""
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "▶" {
			runID = f[2]
		}
		if strings.HasPrefix(line, "✓ big") {
			break
		}
	}
	require.NotEmpty(t, runID)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	data, err := os.ReadFile(filepath.Join(dir, "big.bin"))
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	blobs, err := filepath.Glob(filepath.Join(dir, "runs", "bigkill", "*", "blobs", want))
	require.NoError(t, err)
	require.Len(t, blobs, 1, "the blob is on disk")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
	out, err := exec.Command(bin, "resume", "--dir", dir, "--output", "json", runID).Output()
	require.NoError(t, err, string(out))
	var res struct {
		Status string `json:"status"`
		Steps  []struct {
			Node   string         `json:"node"`
			Cached bool           `json:"cached"`
			Output map[string]any `json:"output"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	require.Equal(t, "completed", string(res.Status))
	outputs := map[string]map[string]any{}
	for _, s := range res.Steps {
		outputs[s.Node] = s.Output
		if s.Node == "big" {
			require.True(t, s.Cached, "big is reused")
		}
	}
	require.Equal(t, want+"  -\n", outputs["sum"]["stdout"], "sum read the exact bytes")
	ref := outputs["big"]["stdout"].(map[string]any)["$skein.blob"].(map[string]any)
	require.Equal(t, want, ref["sha256"])
	count, err := os.ReadFile(filepath.Join(dir, "count"))
	require.NoError(t, err)
	require.Equal(t, "run\n", string(count), "big ran once")
}
