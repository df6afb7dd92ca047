package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValidateReportsWhatARunHereLacks: besides the file, validate names
// at once everything that would stop a run on this machine — models not
// configured, secrets not set, required inputs — as warnings (the file is
// valid), as errors with --strict; inputs given with -i are checked as
// skein run checks them, every problem an error.
func TestValidateReportsWhatARunHereLacks(t *testing.T) {
	t.Parallel()
	file, err := filepath.Abs("testdata/preflight/ready.yaml")
	require.NoError(t, err)
	const f = "testdata/preflight/ready.yaml"
	noModel := f + `:10:6: warning: nodes ask, helper cannot call a model here: llm "default": no model: set model: in llm.default or SKEIN_LLM_MODEL, or OPENAI_API_KEY alone for OpenAI's gpt-4.1-mini (node ask)`
	noJudge := f + `:12:6: warning: node say cannot call a model here: llm "judge": no model: set model: in llm.judge or SKEIN_LLM_MODEL, or OPENAI_API_KEY alone for OpenAI's gpt-4.1-mini (node say)`
	secrets := []string{
		f + ":3:1: warning: secret API_TOKEN is not set here: export SKEIN_SECRET_API_TOKEN (or API_TOKEN), or put it in a --secrets-file",
		f + ":3:1: warning: secret DB_PASSWORD is not set here: export SKEIN_SECRET_DB_PASSWORD (or DB_PASSWORD), or put it in a --secrets-file",
	}
	inputs := []string{
		f + ":5:3: warning: input city is required and has no default: a run needs -i city=…",
		f + ":6:3: warning: input days is required and has no default: a run needs -i days=…",
	}
	configured := map[string]string{"SKEIN_LLM_MODEL": "llama3.2", "SKEIN_LLM_BASE_URL": "http://127.0.0.1:11434/v1", "API_TOKEN": "t", "SKEIN_SECRET_DB_PASSWORD": "p"}
	secretsFile := filepath.Join(t.TempDir(), "secrets.env")
	require.NoError(t, os.WriteFile(secretsFile, []byte("API_TOKEN=t # the token\nDB_PASSWORD=\"p\"\n"), 0o600))

	for _, tc := range []struct {
		name    string
		cfg     string // .skein.yaml of the project
		environ map[string]string
		args    []string
		code    int
		want    []string
		notWant []string
	}{
		{name: "nothing set", args: nil, code: 0, want: append(append([]string{noModel, noJudge}, secrets...), append(inputs, "1 workflow valid")...)},
		{name: "strict", args: []string{"--strict"}, code: 2, want: []string{
			f + `:10:6: error: nodes ask, helper cannot call a model here`, f + ":3:1: error: secret API_TOKEN is not set here", f + ":5:3: error: input city is required"},
			notWant: []string{"valid"}},
		{name: "configured", environ: configured, args: []string{"-i", "city=Oslo", "-i", "days=3"}, code: 0, want: []string{"1 workflow valid"},
			notWant: []string{"warning", "error"}},
		{name: "model from .skein.yaml, secrets from a file", cfg: "model: llama3.2\n", environ: map[string]string{"SKEIN_LLM_BASE_URL": "http://127.0.0.1:11434/v1"},
			args: []string{"--secrets-file", secretsFile}, code: 0, want: inputs, notWant: []string{"model here", "secret"}},
		{name: "model from --model but no API key for OpenAI", args: []string{"--model", "gpt-4.1-mini"}, code: 0, want: []string{
			f + `:10:6: warning: nodes ask, helper cannot call a model here: llm "default": no API key for openai: set api_key: in llm.default or OPENAI_API_KEY or SKEIN_LLM_API_KEY (node ask)`}},
		{name: "unknown provider", environ: map[string]string{"SKEIN_LLM_PROVIDER": "openia", "SKEIN_LLM_MODEL": "m"}, code: 0, want: []string{
			`cannot call a model here: llm "default": unknown provider "openia" in SKEIN_LLM_PROVIDER (providers: anthropic, openai) (node ask)`}},
		{name: "inputs given", environ: configured, args: []string{"-i", "days=many", "-i", "cty=Oslo"}, code: 2, want: []string{
			f + `:4:1: error: input cty: not declared; did you mean "city"? (inputs: city, days, unit)`,
			f + ":5:3: error: input city is required and was not given: pass -i city=…",
			f + `:6:3: error: input days: expected an integer, got string "many"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, _ := project(t, tc.cfg)
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Join(root, "testdata", "preflight"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, f), src, 0o644))
			r := skeinIn(t, root, tc.environ, append([]string{"validate", f}, tc.args...)...)
			require.Equal(t, tc.code, r.code, r.stdout+r.stderr)
			for _, w := range tc.want {
				require.Contains(t, r.stdout, w)
			}
			for _, w := range tc.notWant {
				require.NotContains(t, r.stdout, w)
			}
		})
	}
}

// TestRunNamesEveryInputProblem: skein run refuses inputs that do not fit
// with one error naming each problem, not the first alone.
func TestRunNamesEveryInputProblem(t *testing.T) {
	t.Parallel()
	r := skein(t, "run", "--dir", t.TempDir(), "testdata/preflight/ready.yaml", "-i", "days=many", "-i", "cty=Oslo")
	require.Equal(t, 2, r.code, r.stdout+r.stderr)
	require.Equal(t, `skein: the inputs do not fit the workflow:
  input days: expected an integer, got "many"
  input cty: not declared; did you mean "city"? (inputs: city, days, unit)
  missing required input city (pass -i city=…)
`, r.stderr)
}
