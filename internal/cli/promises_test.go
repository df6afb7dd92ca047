package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cli"
)

// TestRunStartsWhereItIsTold: --trigger starts the run at that trigger
// alone; a trigger the workflow does not have is a usage error (exit 2)
// that lists those it has; a node no start reaches is ignored with a
// warning the run prints and records (docs/running.md, Running).
func TestRunStartsWhereItIsTold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "two.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: two
nodes:
  - {id: by_hand, type: trigger.manual}
  - {id: hook, type: trigger.webhook, path: two, auth: {type: none}}
  - {id: manual_side, type: set, values: {x: 1}}
  - {id: hook_side, type: set, values: {y: 2}}
  - {id: stray, type: set, values: {z: 3}}
edges:
  - {from: by_hand, to: manual_side}
  - {from: hook, to: hook_side}
`), 0o644))
	store := filepath.Join(dir, "store")

	r := skein(t, "run", "--dir", store, "--trigger", "hook", flow)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "✓ hook_side")
	require.NotContains(t, r.stdout, "✓ manual_side")

	r = skein(t, "run", "--dir", store, flow)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "✓ manual_side")
	require.NotContains(t, r.stdout, "✓ hook_side")
	require.Contains(t, r.stdout+r.stderr, `node "stray" is not reachable from the start and is ignored`)
	id := runID(t, r.stdout)
	events := skein(t, "runs", "events", "--dir", store, id)
	require.Equal(t, 0, events.code, events.stderr)
	require.Contains(t, events.stdout, `node \"stray\" is not reachable from the start and is ignored`, "the warning is one of the run's events")

	r = skein(t, "run", "--dir", store, "--trigger", "nosuch", flow)
	require.Equal(t, 2, r.code, r.stdout)
	require.Contains(t, r.stderr, "nosuch")
	require.Contains(t, r.stderr, "by_hand")
	require.Contains(t, r.stderr, "hook")

	// A signal to a run that ended is refused (exit 2), saying so.
	r = skein(t, "signal", "--dir", store, id, "manual_side", "--data", "{}")
	require.Equal(t, 2, r.code, r.stdout)
	require.Contains(t, r.stderr, "completed")
}

// TestRetriesAreShownAsTheyHappen: a retry is one progress line with the
// attempt, the wait and the reason, and a node that took several
// attempts says how many when it ends (docs/running.md, Running).
func TestRetriesAreShownAsTheyHappen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "flaky.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: flaky
nodes:
  - {id: start, type: trigger.manual}
  - id: fetch
    type: shell
    command: [sh, -c, 'n=$(cat "$1" 2>/dev/null || echo 0); echo $((n+1)) > "$1"; [ $n -ge 2 ]', x, "`+filepath.Join(dir, "count")+`"]
    retries: 2
    retry_backoff: 1ms
edges:
  - {from: start, to: fetch}
`), 0o644))
	r := skein(t, "run", "--dir", filepath.Join(dir, "store"), flow)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `↻ fetch\s+attempt 2/3 in \S+`, r.stdout)
	require.Regexp(t, `↻ fetch\s+attempt 3/3 in \S+`, r.stdout)
	require.Regexp(t, `✓ fetch .*after 3 attempts`, r.stdout)
}

// TestSecretsFileLeavesTheEnvironmentAlone: ${NAME} in a secrets file
// reads a name set above it in the file, not the environment.
func TestSecretsFileLeavesTheEnvironmentAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "sec.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: sec
secrets: [A, B]
nodes:
  - {id: say, type: shell, command: [sh, -c, 'test "$0" = "-x" && test "$1" = "first-y"', "{{ secrets.A }}", "{{ secrets.B }}"], allow_option_args: true}
`), 0o644))
	env := filepath.Join(dir, "s.env")
	require.NoError(t, os.WriteFile(env, []byte("FIRST=first\nA=${HOME}-x\nB=${FIRST}-y\n"), 0o600))
	r := skeinIn(t, dir, map[string]string{"HOME": "/home/someone"}, "run", "--dir", filepath.Join(dir, "store"), "--secrets-file", env, flow)
	require.Equal(t, 0, r.code, "HOME is not read from the environment: %s%s", r.stdout, r.stderr)
}

// runID is the id of the run whose progress stdout shows (its first line,
// "▶ run ID · workflow").
func runID(t *testing.T, stdout string) string {
	t.Helper()
	m := regexp.MustCompile(`▶ run ([0-9a-f]+)`).FindStringSubmatch(stdout)
	require.NotNil(t, m, stdout)
	return m[1]
}

// TestCancelDuringARetryWait: a cancel while a node waits for its next
// attempt ends the run at once, without waiting out the backoff; the step
// keeps its failed attempt and the run is cancelled, resumable
// (docs/running.md, the cancel's table).
func TestCancelDuringARetryWait(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "rw.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: rw
nodes:
  - {id: flaky, type: shell, command: [sh, -c, 'echo ran >> "$1"; exit 1', x, "`+filepath.Join(dir, "log")+`"], retries: 3, retry_backoff: 1h}
`), 0o644))
	store := filepath.Join(dir, "store")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.MainIn(ctx, dir, nil, []string{"run", "--dir", store, "--output", "json", flow}, &out, &errb)
	}()
	// The first attempt failed and the next waits an hour: cancel then.
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "log")); err == nil && len(data) > 0 {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("the run ended (exit %d) before its first attempt was seen: %s", code, errb.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	folders, err := filepath.Glob(filepath.Join(store, "runs", "rw", "*"))
	require.NoError(t, err)
	require.Len(t, folders, 1)
	id := filepath.Base(folders[0])
	id = id[strings.LastIndexByte(id, '_')+1:]
	c := skein(t, "cancel", "--dir", store, id)
	require.Equal(t, 0, c.code, c.stderr)
	require.Equal(t, 130, <-done, "the run ends cancelled without waiting out the hour: %s", errb.String())
	var doc struct {
		Status string `json:"status"`
		Steps  []struct {
			Node, Status string
			Attempts     int
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Equal(t, "cancelled", doc.Status)
	require.Len(t, doc.Steps, 1)
	require.Equal(t, "failed", doc.Steps[0].Status)
	require.Equal(t, 1, doc.Steps[0].Attempts)
}
