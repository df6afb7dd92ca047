package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cli"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// skeinIn runs skein as if started in wd with environ as its environment.
func skeinIn(t *testing.T, wd string, environ map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.MainIn(context.Background(), wd, environ, args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// project makes a project folder with a .skein.yaml holding cfg and a
// folder two levels below it, which it returns with the project's path.
func project(t *testing.T, cfg string) (root, sub string) {
	t.Helper()
	root = t.TempDir()
	sub = filepath.Join(root, "a", "b")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	if cfg != "" {
		require.NoError(t, os.WriteFile(filepath.Join(root, cli.ConfigFile), []byte(cfg), 0o644))
	}
	return root, sub
}

// TestDirDefaults: runs go to --dir, else $SKEIN_DIR, else the dir: of the
// nearest .skein.yaml above the current folder (relative to that file),
// else .skein; the commands that read runs find them the same way.
func TestDirDefaults(t *testing.T) {
	t.Parallel()
	ok, err := filepath.Abs("testdata/ok.yaml")
	require.NoError(t, err)
	root, sub := project(t, "# defaults for this project\ndir: store\n")
	envDir := filepath.Join(t.TempDir(), "from-env")
	flagDir := filepath.Join(t.TempDir(), "from-flag")

	for _, tc := range []struct {
		name    string
		environ map[string]string
		flags   []string
		want    string
	}{
		{"config file", nil, nil, filepath.Join(root, "store")},
		{"environment over config", map[string]string{"SKEIN_DIR": envDir}, nil, envDir},
		{"flag over environment", map[string]string{"SKEIN_DIR": envDir}, []string{"--dir", flagDir}, flagDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := skeinIn(t, sub, tc.environ, append([]string{"run", "-o", "json", ok, "-i", "city=Oslo"}, tc.flags...)...)
			require.Equal(t, 0, r.code, r.stderr)
			id := decode(t, r).ID
			require.FileExists(t, filepath.Join(tc.want, "skein.db"))

			l := skeinIn(t, sub, tc.environ, append([]string{"runs", "list"}, tc.flags...)...)
			require.Equal(t, 0, l.code, l.stderr)
			require.Contains(t, l.stdout, id)
		})
	}
}

// TestConcurrencyDefault: concurrency: in .skein.yaml bounds the nodes
// running at once unless --concurrency says otherwise. Each node marks
// itself running and looks for the other's mark: one at a time, neither
// ever sees the other; with meet=yes each also waits (up to a minute, a
// safety net) for the other to start, which only nodes run together can.
func TestConcurrencyDefault(t *testing.T) {
	t.Parallel()
	_, sub := project(t, "concurrency: 1\n")
	file := filepath.Join(sub, "pair.yaml")
	const script = `touch "$1/$2.on"; ` +
		`if [ "$4" = yes ]; then i=0; while [ ! -e "$1/$3.on" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; fi; ` +
		`if [ -e "$1/$3.on" ]; then echo together; else echo alone; fi; ` +
		`[ "$4" = yes ] || rm "$1/$2.on"`
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: pair
inputs:
  dir: {type: string}
  meet: {type: string, default: "no"}
nodes:
  - {id: a, type: shell, command: [sh, -c, '`+script+`', sh, "{{ inputs.dir }}", a, b, "{{ inputs.meet }}"]}
  - {id: b, type: shell, command: [sh, -c, '`+script+`', sh, "{{ inputs.dir }}", b, a, "{{ inputs.meet }}"]}
`), 0o644))
	seen := func(args ...string) []string {
		args = append([]string{"run", "-o", "json", "--dir", t.TempDir(), file, "-i", "dir=" + t.TempDir()}, args...)
		r := skeinIn(t, sub, nil, args...)
		require.Equal(t, 0, r.code, r.stderr)
		var doc struct {
			Steps []struct {
				Output map[string]any `json:"output"`
			}
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
		require.Len(t, doc.Steps, 2)
		var out []string
		for _, s := range doc.Steps {
			out = append(out, strings.TrimSpace(s.Output["stdout"].(string)))
		}
		return out
	}
	require.Equal(t, []string{"alone", "alone"}, seen(), "concurrency: 1 runs one node at a time")
	require.Equal(t, []string{"together", "together"}, seen("--concurrency", "2", "-i", "meet=yes"), "--concurrency 2 wins over the file")
}

// TestModelDefault: an LLM entry without a model uses --model, else
// $SKEIN_LLM_MODEL, else model: in .skein.yaml.
func TestModelDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		environ map[string]string
		flags   []string
		want    string
	}{
		{"config file", nil, nil, "model-from-file"},
		{"environment over config", map[string]string{"SKEIN_LLM_MODEL": "model-from-env"}, nil, "model-from-env"},
		{"flag over environment", map[string]string{"SKEIN_LLM_MODEL": "model-from-env"}, []string{"--model", "model-from-flag"}, "model-from-flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("hi")})
			_, sub := project(t, "model: model-from-file\n")
			file := filepath.Join(sub, "ask.yaml")
			require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: ask
llm:
  default: {provider: openai, base_url: "`+srv.BaseURL()+`", api_key: fake-key}
nodes:
  - {id: ask, type: llm, prompt: "Say hi."}
`), 0o644))
			r := skeinIn(t, sub, tc.environ, append([]string{"run", "--dir", t.TempDir(), file}, tc.flags...)...)
			require.Equal(t, 0, r.code, r.stdout+r.stderr)
			require.Equal(t, 1, srv.Calls())
			require.Equal(t, tc.want, srv.Last().Body["model"])
		})
	}
}

// TestConfigErrors: a configuration file or variable skein cannot use is a
// usage error naming the file and line, before anything runs.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cfg string
		environ   map[string]string
		args      []string
		want      string
	}{
		{"unknown key", "dir: x\nconcurency: 2\n", nil, []string{"runs", "list"}, `.skein.yaml:2: unknown key "concurency" (the keys are dir, model, concurrency)`},
		{"unknown key with a map", "secrets_file: {a: 1}\n", nil, []string{"runs", "list"}, `.skein.yaml:1: unknown key "secrets_file" (the keys are dir, model, concurrency)`},
		{"bad concurrency", "concurrency: many\n", nil, []string{"run", "flow.yaml"}, `.skein.yaml:1: concurrency must be a whole number of at least 1, not "many"`},
		{"not a map", "- dir\n", nil, []string{"cancel", "abc"}, ".skein.yaml:1: expected a map of dir, model, concurrency"},
		{"not YAML", "dir: [x\n", nil, []string{"mcp"}, `.skein.yaml:1:1: YAML: a list written [ … ] is not closed: end it with ], and put a comma between its items`},
		{"not YAML at its second line", "dir: store\n: [\n", nil, []string{"runs", "list"}, ".skein.yaml:2:1: YAML: this line is not a key (name: value) of the map above it: make it one, or indent it as the lines it belongs with"},
		{"bad variable", "", map[string]string{"SKEIN_CONCURRENCY": "0"}, []string{"run", "flow.yaml"}, "SKEIN_CONCURRENCY=0: must be a whole number of at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, sub := project(t, tc.cfg)
			r := skeinIn(t, sub, tc.environ, tc.args...)
			require.Equal(t, 2, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stderr, tc.want)
		})
	}

	// A command that takes none of the defaults does not read the file.
	_, sub := project(t, "nonsense: 1\n")
	r := skeinIn(t, sub, nil, "version")
	require.Equal(t, 0, r.code, r.stderr)
	// validate reads it: the model it names is what llm nodes would use.
	r = skeinIn(t, sub, nil, "validate", "testdata/ok.yaml")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, `unknown key "nonsense"`)
	// An empty file is no error.
	_, sub = project(t, "# nothing yet\n")
	r = skeinIn(t, sub, nil, "runs", "list", "--dir", t.TempDir())
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "no runs here")
	// Nor is a key written and left empty: it is as if not written (dir
	// is .skein, not a folder named "null").
	_, sub = project(t, "dir: null\nmodel: ~\nconcurrency:\n")
	r = skeinIn(t, sub, nil, "runs", "list")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "no runs here: "+filepath.Join(".skein", "skein.db")+" does not exist")
}

// TestFlagNames: the flags commands share have one name and one meaning;
// --workflow of resume and rerun (a file, unlike runs list's name) still
// works, with a note to use --file.
func TestFlagNames(t *testing.T) {
	t.Parallel()
	sk := filepath.Join(t.TempDir(), ".skein")
	r := skein(t, "run", "--dir", sk, "-o", "json", "testdata/fail.yaml")
	require.Equal(t, 1, r.code, r.stderr)
	id := decode(t, r).ID

	p := skein(t, "resume", "--plan", "--dir", sk, "--file", "testdata/fail.yaml", id)
	require.Equal(t, 0, p.code, p.stderr)
	require.Contains(t, p.stdout, "testdata/fail.yaml")
	old := skein(t, "resume", "--plan", "--dir", sk, "--workflow", "testdata/fail.yaml", id)
	require.Equal(t, 0, old.code, old.stderr)
	require.Equal(t, p.stdout, old.stdout)
	require.Contains(t, old.stderr, "skein: --workflow is now --file")

	for _, args := range [][]string{
		{"run", "testdata/ok.yaml"}, {"validate", "testdata/ok.yaml"}, {"runs", "list"}, {"runs", "show", id},
		{"runs", "verdict", id}, {"check", id}, {"cancel", id}, {"resume", id}, {"rerun", id},
	} {
		r := skein(t, append(args, "--dir", sk, "-o", "yaml")...)
		if args[0] == "validate" {
			r = skein(t, append(args, "-o", "yaml")...)
		}
		require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, `invalid argument "yaml" for "-o, --output" flag: must be text or json`, args)
	}

	for _, cmd := range []string{"run", "resume", "rerun", "mcp", "serve"} {
		h := skein(t, cmd, "--help")
		require.Equal(t, 0, h.code)
		for _, flag := range []string{"--dir string", "--concurrency int", "--model string", "--secrets-file string", "--deny-private-networks"} {
			require.Contains(t, h.stdout, flag, "skein %s --help", cmd)
		}
		require.Contains(t, h.stdout, "(default $SKEIN_DIR, else dir: in .skein.yaml, else .skein)")
	}
}
