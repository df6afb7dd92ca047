package check_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/workflow"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/<name>.golden, or rewrites it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	require.Equal(t, string(want), string(got), "%s differs; run go test -update and read the diff", path)
}

// sampleVerdict evaluates a run with passing, warning, failing, judged and
// stopped checks.
func sampleVerdict(t *testing.T) *check.RunVerdict {
	t.Helper()
	w := &workflow.Workflow{
		File: "/srv/flows/signup.yaml",
		Nodes: []*workflow.Node{
			nd("fetch",
				chk("http_status", "status ok", map[string]any{"status": "2xx"}),
				warn(chk("contains", "has admin", map[string]any{"value": "admin", "target": "body.roles"})),
				chk("json_schema", "user shape", map[string]any{"target": "body", "schema": map[string]any{
					"type": "object", "required": []any{"id", "roles"},
				}}),
			),
			withExpect(nd("login",
				exprChk("fast", "login.ms < 1000 && fetch.status == 200"),
				chk("text_present", "welcome", map[string]any{"text": "Welcome"}),
			), "the dashboard is shown"),
			nd("report", chk("file_exists", "pdf", map[string]any{"path": "out/report.pdf"})),
		},
	}
	res := result(
		ok("fetch", 1, 1, map[string]any{"status": 201, "body": map[string]any{"id": 7, "roles": []any{"viewer"}}}),
		ok("login", 2, 1, map[string]any{"ms": 4000}),
		ok("login", 3, 2, map[string]any{"ms": 420}),
		ok("report", 4, 1, map[string]any{"pages": 3}),
	)
	j := &fakeJudge{replies: []func(check.JudgeRequest) ([]check.JudgeVerdict, error){
		reply(
			check.JudgeVerdict{CheckName: "welcome", Verdict: "pass", Reasoning: `The heading reads "Welcome back, Ada".`},
			check.JudgeVerdict{CheckName: "expect", Verdict: "fail", Reasoning: "The login form is still shown; the dashboard never appears."},
		),
	}}
	return check.Evaluate(context.Background(), check.Input{
		Workflow: w, Result: res, Judge: j,
		Images: func(string) []string { return []string{"artifacts/screen.png"} },
	})
}

func TestWriteGolden(t *testing.T) {
	t.Parallel()
	v := sampleVerdict(t)
	dir := t.TempDir()
	require.NoError(t, check.Write(dir, v, nil))

	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	}))
	sort.Strings(files)
	require.Equal(t, []string{"fetch/verdict.json", "login/verdict.json", "report/verdict.json", "verdict.json"}, files,
		"one verdict per run and per checked node, nothing else")

	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		require.True(t, json.Valid(data), "%s holds JSON", f)
		name := "run.verdict.json"
		if d := filepath.Dir(f); d != "." {
			name = d + ".verdict.json"
		}
		golden(t, name, data)
	}
	golden(t, "bar", []byte(check.Bar(v, false)+"\n"+check.Bar(v, true)+"\n"))
	golden(t, "details", []byte(check.Details(v)))

	// The node files hold what the run file holds.
	var run check.RunVerdict
	data, err := os.ReadFile(filepath.Join(dir, "verdict.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &run))
	require.Equal(t, check.StatusFailed, run.Status)
	require.Equal(t, "login", run.Stopped)
	for _, nv := range run.Nodes {
		var got check.NodeVerdict
		data, err := os.ReadFile(filepath.Join(dir, nv.Node, "verdict.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &got))
		require.Equal(t, nv, got)
	}
}

func TestWriteReplaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := &check.RunVerdict{Status: check.StatusFailed, Nodes: []check.NodeVerdict{{Node: "a", Visit: 1, Verdict: check.Fail}}}
	require.NoError(t, check.Write(dir, first, nil))
	second := &check.RunVerdict{Status: check.StatusPassed, Nodes: []check.NodeVerdict{{Node: "a", Visit: 2, Verdict: check.Pass}}}
	require.NoError(t, check.Write(dir, second, nil))

	var got check.NodeVerdict
	data, err := os.ReadFile(filepath.Join(dir, "a", "verdict.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &got))
	require.Equal(t, check.NodeVerdict{Node: "a", Visit: 2, Verdict: check.Pass, Checks: []check.CheckResult{}}, got)

	entries, err := os.ReadDir(filepath.Join(dir, "a"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
}

func TestWriteNoChecks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, check.Write(dir, &check.RunVerdict{}, nil))
	data, err := os.ReadFile(filepath.Join(dir, "verdict.json"))
	require.NoError(t, err)
	require.JSONEq(t, `{"status": "", "nodes": []}`, string(data))
}

func TestWriteRefusesBadNodeIDs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ids  []string
	}{
		{name: "parent", ids: []string{"ok", ".."}},
		{name: "path", ids: []string{"a/b"}},
		{name: "absolute", ids: []string{"/etc"}},
		{name: "empty", ids: []string{""}},
		{name: "upper case", ids: []string{"Fetch"}},
		{name: "leading digit", ids: []string{"1a"}},
		{name: "dot", ids: []string{"a.b"}},
		{name: "too long", ids: []string{string(make([]byte, 65))}},
		{name: "twice", ids: []string{"a", "a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			v := &check.RunVerdict{Status: check.StatusPassed}
			for _, id := range tc.ids {
				v.Nodes = append(v.Nodes, check.NodeVerdict{Node: id, Verdict: check.Pass})
			}
			err := check.Write(dir, v, nil)
			require.ErrorIs(t, err, check.ErrInvalidNode)
			entries, rerr := os.ReadDir(dir)
			require.NoError(t, rerr)
			require.Empty(t, entries, "nothing is written when an id is refused")
		})
	}
}

func TestWriteUnsafeNodeFolder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		plant   func(t *testing.T, dir, outside string)
		wantErr bool
	}{
		{name: "symlink to a folder outside", plant: func(t *testing.T, dir, outside string) {
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, "fetch")))
		}, wantErr: true},
		{name: "file", plant: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "fetch"), []byte("x"), 0o644))
		}, wantErr: true},
		// A stale temporary file is removed, never written through.
		{name: "symlinked temporary file", plant: func(t *testing.T, dir, outside string) {
			require.NoError(t, os.Mkdir(filepath.Join(dir, "fetch"), 0o755))
			require.NoError(t, os.Symlink(filepath.Join(outside, "verdict.json"), filepath.Join(dir, "fetch", ".verdict.json.tmp")))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, outside := t.TempDir(), t.TempDir()
			tc.plant(t, dir, outside)
			err := check.Write(dir, &check.RunVerdict{Status: check.StatusPassed, Nodes: []check.NodeVerdict{{Node: "fetch", Verdict: check.Pass}}}, nil)
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			entries, rerr := os.ReadDir(outside)
			require.NoError(t, rerr)
			require.Empty(t, entries, "nothing is written outside the run folder")
		})
	}
}

// A judge's reasoning that quotes a secret is masked in every verdict file.
func TestWriteMasksSecrets(t *testing.T) {
	t.Parallel()
	const secret = "canary-s3cr3t-value"
	dir := t.TempDir()
	v := &check.RunVerdict{Status: check.StatusFailed, Nodes: []check.NodeVerdict{{Node: "fetch", Verdict: check.Fail,
		Checks: []check.CheckResult{{Node: "fetch", Check: "expect", Type: "expect", Verdict: check.Fail,
			Reasoning: "the page shows the token " + secret}}}}}
	require.NoError(t, check.Write(dir, v, redact.New(map[string]string{"TOKEN": secret})))
	for _, f := range []string{check.VerdictFile, filepath.Join("fetch", check.VerdictFile)} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		require.NotContains(t, string(data), secret, f)
		require.Contains(t, string(data), "the page shows the token ***", f)
	}
	require.Contains(t, v.Nodes[0].Checks[0].Reasoning, secret, "the verdict given is not changed")
}
