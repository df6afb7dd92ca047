package workflow_test

import (
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

var update = flag.Bool("update", false, "rewrite golden files")

// workflowFiles returns the .yaml and .json files under dir, sorted; with
// recursive, sub-folders too (but tour/).
func workflowFiles(t *testing.T, dir string, recursive bool) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (!recursive || d.Name() == "tour") {
				// examples/tour holds the README tour's files, some wrong
				// on purpose (skein validate and --auto-repair show them).
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".test.yaml") {
			return nil // a workflow's tests (skein test), not a workflow
		}
		switch filepath.Ext(path) {
		case ".yaml", ".json":
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, files, "no workflow files under %s", dir)
	sort.Strings(files)
	return files
}

func goldenPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".golden"
}

// TestInvalidGolden loads each file of testdata/invalid (each holds one class
// of mistake) and testdata/warnings (valid files that deserve warnings) and
// compares the diagnostics, as `skein validate` prints them, with the file's
// .golden twin. Run with -update to rewrite the goldens, then read the diff:
// every line:col must point at the offending token.
func TestInvalidGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dir     string
		invalid bool // at least one error; else warnings only
	}{
		{dir: "testdata/invalid", invalid: true},
		{dir: "testdata/warnings", invalid: false},
	}
	for _, tc := range tests {
		files := workflowFiles(t, tc.dir, false)
		seen := map[string]string{}
		for _, path := range files {
			golden := goldenPath(path)
			require.Empty(t, seen[golden], "%s and %s would share the golden %s; rename one", seen[golden], path, golden)
			seen[golden] = path
		}
		stale, err := filepath.Glob(filepath.Join(tc.dir, "*.golden"))
		require.NoError(t, err)
		for _, g := range stale {
			require.NotEmpty(t, seen[filepath.ToSlash(g)], "%s has no workflow file beside it; delete it", g)
		}
		for _, path := range files {
			t.Run(path, func(t *testing.T) {
				t.Parallel()
				_, ds := workflow.Load(path, node.Default)
				var b strings.Builder
				for _, d := range ds {
					require.Equal(t, path, d.File, "every diagnostic names the file")
					require.NotEmpty(t, d.Message)
					b.WriteString(d.String())
					b.WriteByte('\n')
				}
				got := b.String()
				if tc.invalid {
					require.True(t, ds.HasErrors(), "%s should be invalid; got:\n%s", path, got)
				} else {
					require.False(t, ds.HasErrors(), "%s should have warnings only; got:\n%s", path, got)
					require.NotEmpty(t, ds, "%s should have warnings", path)
				}
				golden := goldenPath(path)
				if *update {
					require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
					return
				}
				want, err := os.ReadFile(golden)
				require.NoError(t, err, "missing golden; run go test ./workflow -run TestInvalidGolden -update")
				require.Equal(t, string(want), got, "diagnostics of %s differ from %s (run with -update to accept)", path, golden)
			})
		}
	}
}

// TestAliasBombBounded checks that a YAML alias bomb is refused quickly and
// without expanding it: the expansion would be 10^9 strings. The limit on
// values aliases may expand to (workflow.MaxAliasValues) bounds the work.
// The test does not run in parallel, so the allocation it measures is its
// own. Time is left to the benchmarks (BENCHMARKS.md): a loaded machine
// makes any wall-clock bound flaky, and the allocation bound already
// catches an expansion.
func TestAliasBombBounded(t *testing.T) {
	const path = "testdata/invalid/alias-bomb.yaml"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	w, ds := workflow.Load(path, node.Default)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)

	require.Nil(t, w, "the bomb must not decode")
	require.True(t, ds.HasErrors())
	require.Contains(t, ds.Error(), "aliases expand to more than")
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("refused in %v after allocating %d MiB", elapsed, allocated>>20)
	require.Less(t, allocated, uint64(100<<20), "refusing the bomb allocated %d MiB", allocated>>20)
}

// TestExamplesValid checks that every example validates without errors or
// warnings, and that together they show every registered node kind.
func TestExamplesValid(t *testing.T) {
	t.Parallel()
	files := workflowFiles(t, "../examples", true)
	used := map[string]bool{}
	for _, path := range files {
		w, ds := workflow.Load(path, node.Default)
		require.Empty(t, ds, "%s should be clean:\n%s", path, diagLines(ds))
		for _, n := range w.Nodes {
			used[n.Type] = true
		}
	}
	for _, kind := range node.Default.Kinds() {
		require.True(t, used[kind], "no example uses node type %s; add one to examples/", kind)
	}
}

func diagLines(ds workflow.Diagnostics) string {
	var lines []string
	for _, d := range ds {
		lines = append(lines, d.String())
	}
	return strings.Join(lines, "\n")
}

// runnableKinds are the kinds the engine runs today without outside
// services. An example that uses only these must run to its end.
var runnableKinds = map[string]bool{
	"trigger.manual": true, "if": true, "switch": true, "loop": true, "endloop": true,
	"foreach": true, "merge": true, "guardrail": true, "wait": true, "fail": true,
	"set": true, "template": true, "subworkflow": true,
}

// TestExamplesRun runs every example that needs no outside service and
// checks how it ends. Each runnable example must have a case here.
func TestExamplesRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string
		inputs  map[string]any
		status  engine.RunStatus
		outputs map[string]any // checked key by key
		check   func(t *testing.T, res *engine.Result)
		opts    engine.Options // Park and Signals
	}{
		{
			name: "hello", file: "hello.yaml", status: engine.RunCompleted,
			outputs: map[string]any{"greeting": "Hello, world!", "length": 5},
		},
		{
			name: "branches default", file: "branches.yaml", status: engine.RunCompleted,
			outputs: map[string]any{"lane": "manual review", "tax": 24.0},
		},
		{
			name: "branches small us", file: "branches.yaml", status: engine.RunCompleted,
			inputs:  map[string]any{"amount": 40, "country": "US"},
			outputs: map[string]any{"lane": "automatic", "tax": 2.8},
		},
		{
			name: "branches default case", file: "branches.yaml", status: engine.RunCompleted,
			inputs:  map[string]any{"country": "JP"},
			outputs: map[string]any{"tax": 0, "summary": "120 EUR from JP: manual review, default (no tax rule for JP)"},
		},
		{
			name: "loops", file: "loops.yaml", status: engine.RunCompleted,
			outputs: map[string]any{"polls": 3, "report": "job ready after 3 polls"},
		},
		{
			name: "loops gives up", file: "loops.yaml", status: engine.RunCompleted,
			inputs:  map[string]any{"ready_after": 99},
			outputs: map[string]any{"polls": 5, "report": "job pending after 5 polls"},
		},
		{
			name: "foreach", file: "foreach.yaml", status: engine.RunCompleted,
			outputs: map[string]any{"summary": "notes.txt: keep, photo.jpg: compress, backup.tar: archive"},
		},
		{
			name: "join", file: "join.yaml", status: engine.RunCompleted,
			check: func(t *testing.T, res *engine.Result) {
				profile, _ := res.Outputs["profile"].(map[string]any)
				require.Equal(t, "ada", profile["user"])
				require.Equal(t, 42, profile["runs"])
				require.Equal(t, "Welcome back, ADA", profile["banner"])
				// Either mirror may win the race; one of them must.
				require.Contains(t, []any{"download from eu-west", "download from us-east"}, res.Outputs["download"])
			},
		},
		{
			name: "retry cycle", file: "retry-cycle.yaml", status: engine.RunCompleted,
			outputs: map[string]any{"tries": 2, "result": "published draft 2 with score 90"},
		},
		{
			name: "retry cycle gives up", file: "retry-cycle.yaml", status: engine.RunFailed,
			inputs:  map[string]any{"min_score": 200},
			outputs: map[string]any{"tries": 3},
			check: func(t *testing.T, res *engine.Result) {
				require.NotNil(t, res.Error)
				require.Contains(t, res.Error.Message, "no draft reached 200 after 3 tries")
			},
		},
		{
			name: "routing", file: "routing.yaml", status: engine.RunCompleted,
			outputs: map[string]any{"ticket": "[ENG] App closes when I open settings"},
		},
		{
			name: "routing unknown topic", file: "routing.yaml", status: engine.RunCompleted,
			inputs:  map[string]any{"topic": "password"},
			outputs: map[string]any{"ticket": "[SUPPORT] App closes when I open settings (topic password)"},
		},
		{
			name: "fallback", file: "fallback.yaml", status: engine.RunCompleted,
			outputs: map[string]any{"amount": 12.5, "recovered": true},
		},
		{
			name: "fallback not needed", file: "fallback.yaml", status: engine.RunCompleted,
			inputs:  map[string]any{"amount": "3.5"},
			outputs: map[string]any{"amount": 3.5, "recovered": false},
		},
		{
			name: "fallback fails", file: "fallback.yaml", status: engine.RunFailed,
			inputs: map[string]any{"amount": "oops"},
			check: func(t *testing.T, res *engine.Result) {
				require.NotNil(t, res.Error)
				require.Contains(t, res.Error.Message, "node reject: cannot read oops as an amount")
			},
		},
		{
			name: "subworkflow", file: "subworkflow.yaml", status: engine.RunCompleted,
			outputs: map[string]any{"url": "/blog/ten-things-about-go-generics"},
		},
		{
			name: "checks", file: "checks.yaml", status: engine.RunCompleted,
			outputs: map[string]any{"summary": "3 lines, 60 EUR"},
		},
		{
			name: "approval waits", file: "approval.yaml", status: engine.RunWaiting,
			opts: engine.Options{Park: &engine.Park{After: time.Minute}},
			check: func(t *testing.T, res *engine.Result) {
				require.Equal(t, "approve", res.Awaiting[0].Node)
				require.NotNil(t, res.WakeAt, "its timeout")
			},
		},
		{
			name: "approval approved", file: "approval.yaml", status: engine.RunCompleted,
			opts:    engine.Options{Signals: []engine.Signal{{Node: "approve", Visit: 1, Data: map[string]any{"approved": true, "by": "Grace"}}}},
			outputs: map[string]any{"result": "To team@example.com: the release is ready. (approved by Grace)"},
		},
		{
			name: "json child", file: "sub/slugify.json", status: engine.RunCompleted,
			inputs:  map[string]any{"title": "  Ten Things About   Go Generics "},
			outputs: map[string]any{"slug": "ten-things-about-go-generics"},
		},
	}

	covered := map[string]bool{}
	for _, tc := range tests {
		covered[tc.file] = true
	}
	for _, path := range workflowFiles(t, "../examples", true) {
		w, ds := workflow.Load(path, node.Default)
		require.False(t, ds.HasErrors(), diagLines(ds))
		rel := strings.TrimPrefix(path, "../examples/")
		if runnable(w) {
			require.True(t, covered[rel], "example %s runs without outside services; add a case for it to TestExamplesRun", rel)
		} else {
			require.False(t, covered[rel], "example %s uses kinds that need outside services; it cannot be run here", rel)
		}
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := "../examples/" + tc.file
			w, ds := workflow.Load(path, node.Default)
			require.False(t, ds.HasErrors(), diagLines(ds))
			plan, err := engine.NewPlan(w, node.Default)
			require.NoError(t, err)
			inputs := map[string]any{}
			for _, in := range w.Inputs {
				if in.Default != nil {
					inputs[in.Name] = in.Default
				}
			}
			for k, v := range tc.inputs {
				inputs[k] = v
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			opts := tc.opts
			opts.RunID, opts.Inputs = "example", inputs
			res, err := engine.NewDriver(node.Default, nil, 8).Execute(ctx, plan, opts)
			require.NoError(t, err)
			require.Equal(t, tc.status, res.Status, "run error: %+v", res.Error)
			for k, want := range tc.outputs {
				require.Equal(t, want, res.Outputs[k], "output %s", k)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

func runnable(w *workflow.Workflow) bool {
	for _, n := range w.Nodes {
		if !runnableKinds[n.Type] {
			return false
		}
	}
	return true
}
