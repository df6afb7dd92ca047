package cli_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

var needsRe = regexp.MustCompile(`(?i)\bneeds: (.*)`)

// needsLine is what an example says it needs: the `# needs:` line of the
// comment at the top of a YAML file, or the "Needs:" sentence of a JSON
// file's description (JSON has no comments).
func needsLine(t *testing.T, path string, w *workflow.Workflow) string {
	t.Helper()
	if filepath.Ext(path) == ".json" {
		m := needsRe.FindStringSubmatch(w.Description)
		require.NotNil(t, m, "%s: its description says what it needs (Needs: …)", path)
		return m[1]
	}
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			break
		}
		if m := needsRe.FindStringSubmatch(line); m != nil && strings.HasPrefix(line, "# needs: ") {
			return m[1]
		}
	}
	t.Fatalf("%s: the comment at its top says what it needs to run (# needs: nothing, or # needs: SKEIN_LLM_MODEL and an OpenAI-compatible server, …)", path)
	return ""
}

// TestExamplesSayWhatTheyNeed: every example says at its top what it needs
// to run, and says it of everything it does need: a model for llm and
// agent nodes, judges and expect:; each secret; Node.js for MCP servers
// started with node or npx; skein serve for webhook, schedule and chat
// triggers; skein signal for a wait on a signal; an HTTP server for http
// nodes; each required input. An example that needs none of it says
// "nothing".
func TestExamplesSayWhatTheyNeed(t *testing.T) {
	t.Parallel()
	var files []string
	for _, pat := range []string{"../../examples/*.yaml", "../../examples/*/*.yaml", "../../examples/*.json", "../../examples/*/*.json"} {
		m, err := filepath.Glob(pat)
		require.NoError(t, err)
		for _, f := range m {
			switch {
			case strings.HasSuffix(f, ".test.yaml"): // a workflow's tests, not a workflow
			case filepath.ToSlash(f) == "../../examples/tour/flow.yaml": // wrong on purpose: the README's skein validate
			default:
				files = append(files, f)
			}
		}
	}
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(strings.TrimPrefix(f, "../../"), func(t *testing.T) {
			t.Parallel()
			w, ds := workflow.Load(f, node.Default)
			require.False(t, ds.HasErrors(), "%s", ds)
			says := needsLine(t, f, w)
			var need []string // what it needs, each a word its line must hold
			if len(w.LLM) > 0 {
				need = append(need, "model")
			}
			need = append(need, w.Secrets...)
			for _, s := range w.MCPServers {
				if s.Command == "node" || s.Command == "npx" {
					need = append(need, "Node.js")
				}
			}
			for _, in := range w.Inputs {
				if in.Required && in.Default == nil {
					need = append(need, "-i "+in.Name+"=")
				}
			}
			for _, n := range w.Nodes {
				spec, ok := node.Default.Lookup(n.Type)
				require.True(t, ok, n.Type)
				switch {
				case spec.Category == node.AI, n.Expect != "", n.Params["judge"] != nil:
					need = append(need, "model")
				case n.Type == "trigger.webhook", n.Type == "trigger.schedule", n.Type == "trigger.chat":
					need = append(need, "skein serve")
				case n.Type == "wait" && n.Params["until"] == "signal":
					need = append(need, "skein signal")
				case n.Type == "http":
					need = append(need, "HTTP server")
				}
			}
			if len(need) == 0 {
				require.True(t, strings.HasPrefix(says, "nothing"), "%s needs nothing outside Skein, and says: %q", f, says)
				return
			}
			for _, n := range need {
				require.Contains(t, says, n, "%s: its needs line names what it needs", f)
			}
		})
	}
}
