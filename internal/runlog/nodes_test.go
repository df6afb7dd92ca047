package runlog_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/runlog"
)

// traceDoc is a run document whose steps the node files list, as
// rundoc.Doc is.
type traceDoc struct {
	Status string        `json:"status"`
	Steps  []record.Step `json:"steps"`
}

func (d *traceDoc) StepRecords() []record.Step { return d.Steps }

func at(sec int) *time.Time {
	t := started.Add(time.Duration(sec) * time.Second)
	return &t
}

// traceRecords are the steps and events of a small run: a node visited
// twice (a loop's body) and a skipped one.
func traceRecords(secret string) (*traceDoc, []record.EventRow) {
	doc := &traceDoc{Status: "completed", Steps: []record.Step{
		{Node: "body", Type: "set", Status: record.StatusSuccess, Visit: 1, Attempts: 1, StartedAt: at(1), FinishedAt: at(2)},
		{Node: "skip", Type: "set", Status: record.StatusSkipped, Visit: 1, SkipReason: "dead_path"},
		{Node: "body", Type: "set", Status: record.StatusFailed, Visit: 2, Iteration: 1, Attempts: 2, StartedAt: at(3), FinishedAt: at(5),
			Output: map[string]any{"said": "token " + secret}},
	}}
	evs := []record.EventRow{
		{Seq: 1, Time: *at(0), Type: "execution_started"},
		{Seq: 2, Time: *at(1), Type: "node_started", Node: "body", Visit: 1},
		{Seq: 3, Time: *at(2), Type: "node_finished", Node: "body", Visit: 1, Data: map[string]any{"status": "success"}},
		{Seq: 4, Time: *at(3), Type: "node_started", Node: "body", Visit: 2, Iteration: 1},
		{Seq: 5, Time: *at(4), Type: "tool_result", Node: "body", Visit: 2, Iteration: 1, Data: map[string]any{"text": "got " + secret}},
		{Seq: 6, Time: *at(5), Type: "node_finished", Node: "body", Visit: 2, Iteration: 1, Data: map[string]any{"status": "failed"}},
		{Seq: 7, Time: *at(6), Type: "execution_finished"},
	}
	return doc, evs
}

func TestTraceNodesWritesNodeFiles(t *testing.T) {
	t.Parallel()
	const secret = "canary-s3cr3t-value"
	root := filepath.Join(t.TempDir(), ".skein")
	w, err := runlog.Open(root, "hello", "run1", started, nil, redact.New(map[string]string{"TOKEN": secret}))
	require.NoError(t, err)
	doc, evs := traceRecords(secret)
	reads := 0
	w.TraceNodes(func() ([]record.EventRow, error) { reads++; return evs, nil })
	require.Zero(t, reads, "the events are read when the run's document is written")
	require.NoError(t, w.Finish(doc))
	require.Equal(t, 1, reads)

	var body runlog.NodeRun
	readJSON(t, filepath.Join(w.Dir(), "body", "run.json"), &body)
	require.Equal(t, "run1", body.ExecutionID)
	require.Equal(t, "hello", body.Workflow)
	require.Equal(t, "body", body.Node)
	require.Equal(t, "set", body.Type)
	require.Equal(t, "nodes", string(body.Trace))
	require.Equal(t, string(record.StatusFailed), string(body.Status), "the last visit's status")
	require.Equal(t, *at(1), *body.StartedAt, "the first visit's start")
	require.Equal(t, *at(5), *body.FinishedAt, "the last visit's end")
	require.Equal(t, 3, body.Attempts)
	require.Len(t, body.Visits, 2)
	require.Equal(t, []int{1, 2}, []int{body.Visits[0].Visit, body.Visits[1].Visit})
	require.Equal(t, "token ***", body.Visits[1].Output["said"], "secrets are masked")

	lines := readLines(t, filepath.Join(w.Dir(), "body", "events.jsonl"))
	var types []string
	for _, l := range lines {
		require.Equal(t, "body", l["node"])
		types = append(types, l["type"].(string))
	}
	require.Equal(t, []string{"node_started", "node_finished", "node_started", "tool_result", "node_finished"}, types)
	require.Equal(t, "got ***", lines[3]["data"].(map[string]any)["text"])

	var skip runlog.NodeRun
	readJSON(t, filepath.Join(w.Dir(), "skip", "run.json"), &skip)
	require.Equal(t, string(record.StatusSkipped), string(skip.Status))
	require.Nil(t, skip.StartedAt)
	data, err := os.ReadFile(filepath.Join(w.Dir(), "skip", "events.jsonl"))
	require.NoError(t, err)
	require.Empty(t, data, "a node without events has an empty events.jsonl")

	for _, f := range []string{"body/run.json", "body/events.jsonl"} {
		data, err := os.ReadFile(filepath.Join(w.Dir(), f))
		require.NoError(t, err)
		require.NotContains(t, string(data), "s3cr3t", f)
	}
}

// Without TraceNodes, the fast layout: no node folder.
func TestNoTraceNoNodeFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc, _ := traceRecords("x")
	require.NoError(t, b.w.Finish(doc))
	require.Equal(t, []string{". d---------", "events.jsonl ----------", "run.json ----------"}, tree(t, b.w.Dir()))
}

// A traced run kept on demand gets its folder when its document is
// written, with its node files and run.json, but no events.jsonl of its
// own (its events are in the database).
func TestTraceNodesMakesOnDemandFolder(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), ".skein")
	w, err := runlog.OpenOnDemand(root, "hello", "served", started, nil, nil)
	require.NoError(t, err)
	doc, evs := traceRecords("x")
	w.TraceNodes(func() ([]record.EventRow, error) { return evs, nil })
	require.NoDirExists(t, w.Dir())
	require.NoError(t, w.Finish(doc))
	require.FileExists(t, filepath.Join(w.Dir(), "run.json"))
	require.FileExists(t, filepath.Join(w.Dir(), "body", "run.json"))
	require.FileExists(t, filepath.Join(w.Dir(), "body", "events.jsonl"))
	require.NoFileExists(t, filepath.Join(w.Dir(), "events.jsonl"))
}

func TestTraceNodesRefusesEscapesAndWhatIsInTheWay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		node  string
		plant func(t *testing.T, dir, outside string)
		want  error
	}{
		{name: "parent", node: "../x", want: runlog.ErrInvalidName},
		{name: "absolute", node: "/tmp/x", want: runlog.ErrInvalidName},
		{name: "slash", node: "a/b", want: runlog.ErrInvalidName},
		{name: "symlink as node folder", node: "evil", want: runlog.ErrUnsafePath,
			plant: func(t *testing.T, dir, outside string) { symlink(t, outside, filepath.Join(dir, "evil")) }},
		{name: "file as node folder", node: "n", want: runlog.ErrUnsafePath,
			plant: func(t *testing.T, dir, _ string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "n"), nil, 0o644))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			outside := t.TempDir()
			if tt.plant != nil {
				tt.plant(t, b.w.Dir(), outside)
			}
			before, beforeRoot := tree(t, outside), tree(t, filepath.Dir(b.root))
			b.w.TraceNodes(func() ([]record.EventRow, error) { return nil, nil })
			err := b.w.Finish(&traceDoc{Status: "completed", Steps: []record.Step{{Node: tt.node, Status: record.StatusSuccess, Visit: 1}}})
			require.ErrorIs(t, err, tt.want)
			require.Equal(t, before, tree(t, outside), "nothing written outside the run folder")
			if tt.plant == nil {
				require.Equal(t, beforeRoot, tree(t, filepath.Dir(b.root)), "no file added")
			}
			var doc map[string]any
			readJSON(t, filepath.Join(b.w.Dir(), "run.json"), &doc)
			require.Equal(t, "completed", doc["status"], "run.json is the run's document all the same")
		})
	}
}

func TestTraceNodesReportsEventsItCannotRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc, _ := traceRecords("x")
	b.w.TraceNodes(func() ([]record.EventRow, error) { return nil, errors.New("database is gone") })
	err := b.w.Finish(doc)
	require.ErrorContains(t, err, "reading the events of run run1 for its node files: database is gone")
	var got map[string]any
	readJSON(t, filepath.Join(b.w.Dir(), "run.json"), &got)
	require.Equal(t, "completed", got["status"], "run.json is the run's document all the same")
}

// BenchmarkFinish200Nodes: Finish of a run of 200 nodes (one step and
// three events each), in the default layout and traced with nodes; the
// difference, over 200, is what --trace nodes costs a node in the folder's
// writer (folder, two files, their encoding). The folder is on the test's
// temporary disk.
func BenchmarkFinish200Nodes(b *testing.B) {
	const n = 200
	doc := &traceDoc{Status: "completed"}
	var evs []record.EventRow
	for i := range n {
		id := fmt.Sprintf("n%d", i)
		doc.Steps = append(doc.Steps, record.Step{Node: id, Type: "set", Status: record.StatusSuccess, Visit: 1, Attempts: 1,
			StartedAt: at(i), FinishedAt: at(i + 1), Params: map[string]any{"values": map[string]any{"i": i}},
			Output: map[string]any{"success": true}})
		evs = append(evs,
			record.EventRow{Time: *at(i), Type: "node_started", Node: id, Visit: 1},
			record.EventRow{Time: *at(i), Type: "variable_set", Node: id, Visit: 1, Data: map[string]any{"names": []any{"i"}}},
			record.EventRow{Time: *at(i + 1), Type: "node_finished", Node: id, Visit: 1, Data: map[string]any{"status": "success"}})
	}
	for _, traced := range []bool{false, true} {
		name := "run"
		if traced {
			name = "nodes"
		}
		b.Run(name, func(b *testing.B) {
			root := filepath.Join(b.TempDir(), ".skein")
			i := 0
			for b.Loop() {
				i++
				w, err := runlog.Open(root, "chain", fmt.Sprintf("run%d", i), started, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if traced {
					w.TraceNodes(func() ([]record.EventRow, error) { return evs, nil })
				}
				if err := w.Finish(doc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/n, "µs/node")
		})
	}
}
