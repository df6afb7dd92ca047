package runner_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// bigFlow writes 3 MB of random bytes (not UTF-8) to a file and to
// stdout, counting its runs; downstream nodes read it as a template would.
// gate fails until its file exists.
func bigFlow(b *bundle) string {
	return `version: 1
name: big
nodes:
  - id: big
    type: shell
    command: [sh, -c, 'echo run >> "$1.count"; head -c 3000000 /dev/urandom > "$1"; cat "$1"', x, "` + filepath.Join(b.dir, "big.bin") + `"]
  - {id: gate, type: shell, command: [test, -f, "` + filepath.Join(b.dir, "gate") + `"]}
  - {id: sum, type: shell, command: [sha256sum], stdin: "{{ big.stdout }}"}
  - id: measure
    type: set
    values: {n: "{{ len(big.stdout) }}", again: "{{ big.stdout }}"}
edges:
  - {from: big, to: gate}
  - {from: gate, to: sum}
  - {from: gate, to: measure}
`
}

// runes is what len() gives for the text of a file: its characters.
func runes(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return utf8.RuneCount(data)
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func stepOutput(t *testing.T, doc *runner.RunDoc, node string) map[string]any {
	t.Helper()
	for _, s := range doc.Steps {
		if s.Node == node {
			out := s.Output
			return out
		}
	}
	t.Fatalf("no step of %s", node)
	return nil
}

// TestABigOutputReachesDownstreamWhole: a 3 MB output is one file of the
// run folder, referenced from the step and the database; the nodes that
// read it get its exact bytes, and -o json shows a reference object.
func TestABigOutputReachesDownstreamWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "gate"), nil, 0o644))
	w, err := b.r.Load(b.write(t, "big.yaml", bigFlow(b)))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	require.Equal(t, "completed", string(res.Run.Status))

	want := fileSum(t, filepath.Join(b.dir, "big.bin"))
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, want+"  -\n", stepOutput(t, doc, "sum")["stdout"], "the command read the exact bytes")
	require.Equal(t, runes(t, filepath.Join(b.dir, "big.bin")), stepOutput(t, doc, "measure")["n"])

	ref, ok := stepOutput(t, doc, "big")["stdout"].(*blob.Blob)
	require.True(t, ok, "the stored output refers to a blob")
	require.Equal(t, want, ref.Digest())
	require.Equal(t, want, fileSum(t, ref.Path()))
	require.Equal(t, filepath.Join(res.Run.Dir, "blobs", want), ref.Path())
	again, ok := stepOutput(t, doc, "measure")["again"].(*blob.Blob)
	require.True(t, ok)
	require.Equal(t, ref.Path(), again.Path(), "a value passed on is the same file")
	entries, err := os.ReadDir(filepath.Join(res.Run.Dir, "blobs"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "one file for the one value, read by three nodes")

	data, err := json.Marshal(doc)
	require.NoError(t, err)
	require.Less(t, len(data), 64<<10, "the run document holds references")
	var plain struct {
		Steps []struct {
			Node   string         `json:"node"`
			Output map[string]any `json:"output"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(data, &plain))
	require.Equal(t, map[string]any{blob.Key: map[string]any{
		"sha256": want, "size": float64(3_000_000), "type": "text", "path": ref.Path(),
	}}, plain.Steps[0].Output["stdout"])

	db, err := os.Stat(filepath.Join(b.dir, ".skein", "skein.db"))
	require.NoError(t, err)
	size := db.Size()
	if wal, err := os.Stat(filepath.Join(b.dir, ".skein", "skein.db-wal")); err == nil {
		size += wal.Size() // the log a closed database keeps
	}
	require.Less(t, size, int64(1<<20), "the database holds no copy")
}

// TestResumeReusesABigStep: after a later node fails, a resume reuses the
// big step (it does not run again) and the nodes after it read its bytes
// from the blob.
func TestResumeReusesABigStep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "big.yaml", bigFlow(b)))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status), "gate is closed")

	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "gate"), nil, 0o644))
	again, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.NoError(t, again.Err)
	require.Equal(t, "completed", string(again.Run.Status))

	count, err := os.ReadFile(filepath.Join(b.dir, "big.bin.count"))
	require.NoError(t, err)
	require.Equal(t, "run\n", string(count), "big ran once")
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.True(t, doc.Steps[0].Cached)
	want := fileSum(t, filepath.Join(b.dir, "big.bin"))
	require.Equal(t, want+"  -\n", stepOutput(t, doc, "sum")["stdout"])
	require.Equal(t, runes(t, filepath.Join(b.dir, "big.bin")), stepOutput(t, doc, "measure")["n"])
}

// TestResumeWithABrokenBlobsFolder: a resume whose run folder has a
// file where its blobs folder goes runs, and the node whose big output
// cannot be kept fails as big_value, its error naming the folder once —
// as a fresh run's would — instead of the resume being refused.
func TestResumeWithABrokenBlobsFolder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	flow := `version: 1
name: late
nodes:
  - {id: big, type: shell, command: [sh, -c, 'test -f "$1" && head -c 100000 /dev/zero', x, "` + filepath.Join(b.dir, "gate") + `"]}
`
	w, err := b.r.Load(b.write(t, "late.yaml", flow))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status), "gate is closed")

	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "gate"), nil, 0o644))
	blobs := filepath.Join(res.Run.Dir, "blobs")
	require.NoError(t, os.WriteFile(blobs, []byte("not a folder"), 0o644))
	again, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err, "the resume runs")
	require.Equal(t, "failed", string(again.Run.Status))
	require.NotNil(t, again.Run.Error)
	require.Equal(t, "big", again.Run.Error.Node)
	require.Equal(t, "big_value", again.Run.Error.Code)
	require.Contains(t, again.Run.Error.Message, "keeping its output: writing a big value to "+blobs)
	require.Equal(t, 1, strings.Count(again.Run.Error.Message, "node big"), "the error names its node once: %s", again.Run.Error.Message)
	require.Equal(t, 2, again.Run.Generation)
}

// TestPinnedBigOutputOutlivesItsRun: rerun --pin of a big step links its
// blob into the new run's folder, so pruning the old run loses nothing;
// pruning the new one removes its blobs with it.
func TestPinnedBigOutputOutlivesItsRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "gate"), nil, 0o644))
	w, err := b.r.Load(b.write(t, "big.yaml", bigFlow(b)))
	require.NoError(t, err)
	first, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "completed", string(first.Run.Status))

	second, err := b.r.Rerun(b.ctx, runner.RerunRequest{RunID: first.Run.ID, Pins: []string{"big"}})
	require.NoError(t, err)
	require.Equal(t, "completed", string(second.Run.Status))
	require.NoError(t, os.RemoveAll(first.Run.Dir))

	doc, err := b.r.Get(b.ctx, second.Run.ID)
	require.NoError(t, err)
	want := fileSum(t, filepath.Join(b.dir, "big.bin"))
	require.Equal(t, want+"  -\n", stepOutput(t, doc, "sum")["stdout"])
	ref := stepOutput(t, doc, "big")["stdout"].(*blob.Blob)
	require.True(t, strings.HasPrefix(ref.Path(), second.Run.Dir), "the pinned value is the new run's")
	require.Equal(t, want, fileSum(t, ref.Path()))

	pruned, err := b.r.Prune(b.ctx, runner.PruneRequest{OlderThan: time.Nanosecond})
	require.NoError(t, err)
	require.Len(t, pruned.Runs, 2)
	_, err = os.Stat(ref.Path())
	require.ErrorIs(t, err, os.ErrNotExist, "the blob went with its run")
	_, err = os.Stat(filepath.Join(b.dir, ".skein", "runs", "big"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestAForeachOverBigOutputs: the list of a foreach's results holds
// references; a node after it reads what it needs of them, and the run's
// folder holds each output once.
func TestAForeachOverBigOutputs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "each.yaml", `version: 1
name: each
nodes:
  - {id: each, type: foreach, items: "{{ 1..4 }}", concurrency: 2}
  - {id: item, type: shell, command: [sh, -c, 'head -c 200000 /dev/zero | tr "\\0" "$1"', x, "{{ loop.item }}"]}
  - {id: next, type: endloop, loop: each}
  - id: done
    type: set
    values: {n: "{{ len(each.items) }}", third: "{{ each.items[2].stdout[0:3] }}", total: "{{ sum(map(each.items, len(.stdout))) }}"}
edges:
  - {from: each, to: item, on: body}
  - {from: item, to: next}
  - {from: each, to: done, on: done}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	require.Equal(t, "completed", string(res.Run.Status))
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	done := stepOutput(t, doc, "done")
	require.Equal(t, 4, done["n"])
	require.Equal(t, "333", done["third"])
	require.Equal(t, 800_000, done["total"])
	entries, err := os.ReadDir(filepath.Join(res.Run.Dir, "blobs"))
	require.NoError(t, err)
	require.Len(t, entries, 4, "one file per output")
}

// TestABigValueWithASecretStaysOutOfFiles: a big output that holds a
// secret is not written to a blob; the nodes after it read it unmasked,
// and no file of the run holds the secret.
func TestABigValueWithASecretStaysOutOfFiles(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value-42"
	b := setupEnv(t, map[string]string{"TOKEN": secret})
	r, dir := b.r, b.dir
	w, err := r.Load(b.write(t, "secret.yaml", `version: 1
name: secret
secrets: [TOKEN]
nodes:
  - id: big
    type: shell
    command: [sh, -c, 'head -c 300000 /dev/zero | tr "\\0" x; printf %s "$T"', x]
    env: {T: "{{ secrets.TOKEN }}"}
  - {id: found, type: set, values: {it: "{{ big.stdout contains secrets.TOKEN }}", n: "{{ len(big.stdout) }}"}}
edges:
  - {from: big, to: found}
`))
	require.NoError(t, err)
	res, err := r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	doc, err := r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, true, stepOutput(t, doc, "found")["it"], "the live run saw the value")
	require.Equal(t, 300_000+len(secret), stepOutput(t, doc, "found")["n"])

	_, isBlob := stepOutput(t, doc, "big")["stdout"].(*blob.Blob)
	require.True(t, isBlob, "its masked record is a blob")
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		require.NotContains(t, string(data), secret, path)
		return nil
	})
	require.NoError(t, err)
}

// TestTheOutputMemoryBudget: once a run has kept max_output_memory of
// output values in memory, smaller values go to blobs too; what reads
// them sees no difference.
func TestTheOutputMemoryBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "budget.yaml", `version: 1
name: budget
limits: {max_output_memory: 1MiB}
nodes:
  - {id: each, type: foreach, items: "{{ 1..40 }}"}
  - {id: item, type: shell, command: [sh, -c, 'head -c 40000 /dev/zero | tr "\\0" "$1"', x, "{{ loop.item % 10 }}"]}
  - {id: next, type: endloop, loop: each}
  - {id: done, type: set, values: {total: "{{ sum(map(each.items, len(.stdout))) }}", last: "{{ each.items[39].stdout[0:2] }}"}}
edges:
  - {from: each, to: item, on: body}
  - {from: item, to: next}
  - {from: each, to: done, on: done}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	var failed []string
	for _, s := range doc.Steps {
		if s.Error != nil {
			failed = append(failed, s.Node+": "+s.Error.Message)
		}
	}
	require.Equal(t, "completed", string(doc.Status), "the run's error: %v; its failed steps: %q", doc.Error, failed)
	require.Equal(t, 1_600_000, stepOutput(t, doc, "done")["total"])
	require.Equal(t, "00", stepOutput(t, doc, "done")["last"])
	kept, moved := 0, 0
	for _, s := range doc.Steps {
		if s.Node != "item" {
			continue
		}
		switch s.Output["stdout"].(type) {
		case string:
			kept++
		case *blob.Blob:
			moved++
		}
	}
	require.Equal(t, 40, kept+moved)
	require.InDelta(t, 25, kept, 2, "about 1 MiB of 40 KB values stays in memory")
	require.Positive(t, moved)
}

// TestABudgetRaisesTheMemoryLimit: a run whose workflow keeps more output
// values in memory raises the process's soft memory limit to match, when
// the process has one (skein sets one); it never lowers it. Not parallel:
// the limit is the process's.
func TestABudgetRaisesTheMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(blob.MemoryLimit(blob.DefaultBudget))
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	b := setup(t)
	w, err := b.r.Load(b.write(t, "m.yaml", "version: 1\nname: m\nlimits: {max_output_memory: 1GiB}\nnodes:\n  - {id: a, type: set, values: {x: 1}}\n"))
	require.NoError(t, err)
	_, err = b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, blob.MemoryLimit(1<<30), debug.SetMemoryLimit(-1))

	w, err = b.r.Load(b.write(t, "s.yaml", "version: 1\nname: s\nlimits: {max_output_memory: 2MiB}\nnodes:\n  - {id: a, type: set, values: {x: 1}}\n"))
	require.NoError(t, err)
	_, err = b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, blob.MemoryLimit(1<<30), debug.SetMemoryLimit(-1), "not lowered")
}

// TestABigOutputOnPostgresIsInTheDatabase: a run on Postgres executed in
// this process keeps its big values in the database's blob store, so that
// another process on the database — one that never saw the run folder —
// reads them.
func TestABigOutputOnPostgresIsInTheDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	dir := t.TempDir()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, "here"), DB: db, Placement: runner.PlaceLocal})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	b := &bundle{ctx: t.Context(), r: r, dir: dir}
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "gate"), nil, 0o644))
	w, err := r.Load(b.write(t, "big.yaml", bigFlow(b)))
	require.NoError(t, err)
	res, err := r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.NoError(t, res.Err)

	other, err := runner.Open(runner.Config{Dir: filepath.Join(dir, "elsewhere"), DB: db})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, other.Close()) })
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "here"))) // the run folder is gone
	doc, err := other.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	ref, ok := stepOutput(t, doc, "big")["stdout"].(*blob.Blob)
	require.True(t, ok, "the stored output refers to a blob")
	require.Equal(t, "postgres", ref.Store())
	got, err := ref.Load()
	require.NoError(t, err)
	require.Equal(t, fileSum(t, filepath.Join(b.dir, "big.bin")), sha(got.(string)))
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// onDemandFlow prints 100,000 bytes (a big value) when big is true, else a
// line; the next node counts them.
func onDemandFlow(big bool) string {
	n := 10
	if big {
		n = 100000
	}
	return fmt.Sprintf(`version: 1
name: ondemand
nodes:
  - {id: print, type: shell, command: [sh, -c, "head -c %d /dev/zero | tr '\\0' x"]}
  - {id: count, type: shell, command: [wc, -c], stdin: "{{ print.stdout }}"}
edges:
  - {from: print, to: count}
outputs:
  bytes: "{{ trim(count.stdout) }}"
  text: "{{ print.stdout }}"
`, n)
}

// TestOnDemandFolderIsMadeForABigValue: with run folders made on demand
// (skein serve's default), a run that keeps a big value gets its folder
// then — made through the run folder's writer, which refuses a symlink in
// its place — with the blob and, at the end, run.json; a run that keeps
// none gets no folder.
func TestOnDemandFolderIsMadeForABigValue(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*runner.Runner, string, time.Time) {
		dir := filepath.Join(t.TempDir(), ".skein")
		started := time.Date(2026, 11, 27, 21, 30, 0, 0, time.UTC)
		r, err := runner.Open(runner.Config{Dir: dir, OnDemandFolders: true, Clock: clock.NewFake(started)})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, r.Close()) })
		return r, dir, started
	}
	start := func(t *testing.T, r *runner.Runner, dir string, big bool, id string) *runner.Result {
		p := filepath.Join(filepath.Dir(dir), "ondemand.yaml")
		require.NoError(t, os.WriteFile(p, []byte(onDemandFlow(big)), 0o644))
		w, err := r.Load(p)
		require.NoError(t, err)
		res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w, RunID: id})
		require.NoError(t, err)
		return res
	}

	t.Run("a big value", func(t *testing.T) {
		t.Parallel()
		r, dir, _ := setup(t)
		res := start(t, r, dir, true, "")
		require.NoError(t, res.Err)
		require.Equal(t, "completed", string(res.Run.Status))
		doc, err := r.Get(t.Context(), res.Run.ID)
		require.NoError(t, err)
		require.Equal(t, "100000", doc.Outputs["bytes"], "the next node read the value whole")
		want := strings.Repeat("x", 100000)
		sum := sha256.Sum256([]byte(want))
		for _, v := range []any{stepOutput(t, doc, "print")["stdout"], doc.Outputs["text"]} {
			ref, ok := v.(*blob.Blob)
			require.True(t, ok, "a big value is a blob: %T", v)
			require.Equal(t, filepath.Join(res.Run.Dir, "blobs", hex.EncodeToString(sum[:])), ref.Path())
			data, err := os.ReadFile(ref.Path())
			require.NoError(t, err)
			require.True(t, string(data) == want, "the file holds the value")
		}
		require.FileExists(t, filepath.Join(res.Run.Dir, "run.json"), "the folder made for the blob gets the run document")
		require.NoFileExists(t, filepath.Join(res.Run.Dir, "events.jsonl"), "an on-demand folder's events are in the database")
	})

	t.Run("nothing big", func(t *testing.T) {
		t.Parallel()
		r, dir, _ := setup(t)
		res := start(t, r, dir, false, "")
		require.NoError(t, res.Err)
		require.Equal(t, "completed", string(res.Run.Status))
		require.NoDirExists(t, res.Run.Dir, "a run that keeps nothing gets no folder")
	})

	t.Run("a symlink in the folder's place", func(t *testing.T) {
		t.Parallel()
		r, dir, started := setup(t)
		elsewhere := t.TempDir()
		runs := filepath.Join(dir, "runs", "ondemand")
		require.NoError(t, os.MkdirAll(runs, 0o755))
		folder := filepath.Join(runs, started.Format("2006-01-02_15-04-05")+"_link00000001")
		require.NoError(t, os.Symlink(elsewhere, folder))
		res := start(t, r, dir, true, "link00000001")
		require.Equal(t, "failed", string(res.Run.Status))
		require.NotNil(t, res.Run.Error)
		require.Equal(t, "big_value", res.Run.Error.Code, "the failure says a big value could not be kept")
		require.Contains(t, res.Run.Error.Message, "writing a big value to "+filepath.Join(folder, "blobs"))
		require.Contains(t, res.Run.Error.Message, "is a symlink, not a folder; remove it and run again")
		left, err := os.ReadDir(elsewhere)
		require.NoError(t, err)
		require.Empty(t, left, "nothing was written through the symlink")
	})
}

// TestOnDemandFolderIsMadeForACassette: a recorded run (record: true)
// with run folders made on demand gets its folder, through the folder's
// writer, for its cassette; a symlink in the folder's place is refused.
func TestOnDemandFolderIsMadeForACassette(t *testing.T) {
	t.Parallel()
	const flow = `version: 1
name: taped
record: true
nodes:
  - {id: roll, type: shell, command: [sh, -c, "od -An -N4 -tu4 /dev/urandom"]}
`
	for _, trap := range []bool{false, true} {
		t.Run(fmt.Sprintf("symlink in the way %v", trap), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), ".skein")
			started := time.Date(2026, 11, 27, 21, 30, 0, 0, time.UTC)
			r, err := runner.Open(runner.Config{Dir: dir, OnDemandFolders: true, Clock: clock.NewFake(started), LookupEnv: func(string) (string, bool) { return "", false }})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, r.Close()) })
			p := filepath.Join(filepath.Dir(dir), "taped.yaml")
			require.NoError(t, os.WriteFile(p, []byte(flow), 0o644))
			w, err := r.Load(p)
			require.NoError(t, err)
			folder := filepath.Join(dir, "runs", "taped", started.Format("2006-01-02_15-04-05")+"_tape00000001")
			elsewhere := t.TempDir()
			if trap {
				require.NoError(t, os.MkdirAll(filepath.Dir(folder), 0o755))
				require.NoError(t, os.Symlink(elsewhere, folder))
			}
			res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w, RunID: "tape00000001"})
			require.NoError(t, err)
			if trap {
				require.ErrorIs(t, res.Err, runlog.ErrUnsafePath)
				left, err := os.ReadDir(elsewhere)
				require.NoError(t, err)
				require.Empty(t, left, "nothing was written through the symlink")
				return
			}
			require.NoError(t, res.Err)
			require.Equal(t, folder, res.Run.Dir)
			require.FileExists(t, filepath.Join(folder, cassette.FileName))
			require.FileExists(t, filepath.Join(folder, "run.json"))
		})
	}
}
