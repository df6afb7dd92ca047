package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
)

// The data of the events that say only a step's status is one map per
// status, and the output of an endloop one map, shared by every run of the
// process: masking a secret in one run's records (a secret that happens
// to read "success") copies them, and the next run's still say "success".
func TestMaskingAnEventLeavesTheNextRunsEventsAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) string {
		file := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
		return file
	}
	const graph = `nodes:
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1, 2] }}"}
  - {id: item, type: set, values: {i: "{{ loop.item }}"}}
  - {id: next, type: endloop, loop: each}
edges:
  - {from: start, to: each}
  - {from: each, to: item, on: body}
  - {from: item, to: next}
`
	masked := write("masked.yaml", "version: 1\nname: masked\nsecrets: [WORD]\n"+graph)
	plain := write("plain.yaml", "version: 1\nname: plain\n"+graph)
	env := func(k string) (string, bool) {
		if k == "SKEIN_SECRET_WORD" {
			return "success", true
		}
		return "", false
	}
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: env})
	require.NoError(t, err)
	defer r.Close()
	ctx := context.Background()
	finished := func(file string) (statuses []any, outputs []map[string]any) {
		w, err := r.Load(file)
		require.NoError(t, err)
		res, err := r.Start(ctx, runner.StartRequest{Workflow: w})
		require.NoError(t, err)
		require.NoError(t, res.Err)
		evs, _, err := r.Events(ctx, res.Run.ID, 0, 0)
		require.NoError(t, err)
		for _, ev := range evs {
			if ev.Type == "node_finished" && ev.Node == "item" {
				statuses = append(statuses, ev.Data["status"])
			}
		}
		doc, err := r.Get(ctx, res.Run.ID)
		require.NoError(t, err)
		for _, s := range doc.Steps {
			if s.Node == "next" {
				outputs = append(outputs, s.Output)
			}
		}
		return statuses, outputs
	}
	for range 2 {
		statuses, outputs := finished(masked)
		require.Equal(t, []any{"***", "***"}, statuses)
		require.Equal(t, []map[string]any{{"***": true}, {"***": true}}, outputs)
		statuses, outputs = finished(plain)
		require.Equal(t, []any{"success", "success"}, statuses)
		require.Equal(t, []map[string]any{{"success": true}, {"success": true}}, outputs)
	}
}
