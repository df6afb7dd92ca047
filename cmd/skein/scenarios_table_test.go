package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
)

// bigText is an input over the 64 KiB a value may take inline.
var bigText = strings.Repeat("big input ", 10_000)

// scenarios is the semantics contract (see scenario_test.go). Each name
// is a workflow of testdata/scenarios and a golden of
// testdata/scenarios/want.
var scenarios = []scenario{
	// Data and expressions.
	{name: "chain", inputs: map[string]any{"who": "Ada"}, order: [][2]string{{"greet", "measure"}}},
	{name: "value_types", inputs: map[string]any{"i": 21, "n": 0.5, "b": false, "l": []any{true, 2.5, "x", nil, []any{}}, "o": map[string]any{"deep": map[string]any{"k": nil}}, "s": "ü ✓"}},
	// Branches, joins and dead paths.
	{name: "if_branches", inputs: map[string]any{"amount": 250}},
	{name: "switch_cases"},
	{name: "merge_all", order: [][2]string{{"a", "join"}, {"b", "join"}, {"join", "after"}}},
	{name: "merge_any", order: [][2]string{{"fast", "first"}}},
	{name: "dead_paths"},
	{name: "all_dead"},
	{name: "route_directive", inputs: map[string]any{"to": "c"}},
	{name: "guardrail_pass"},
	{name: "guardrail_fail"},
	// Loops, foreach and visit limits.
	{name: "loop_exit"},
	{name: "loop_max"},
	{name: "nested_loops"},
	{name: "foreach_basic"},
	{name: "foreach_empty"},
	{name: "foreach_concurrency", anyVisit: true},
	{name: "foreach_item_continue"},
	{name: "foreach_item_fail"},
	{name: "nested_foreach"},
	{name: "guardrail_visits"},
	{name: "cycle_visits"},
	{name: "visit_limit_routed_back"},
	{name: "disabled_nodes"},
	{name: "half_built"},
	// Failures, retries and on_error.
	{name: "fail_node", inputs: map[string]any{"why": "the feed is empty"}},
	{name: "retry_backoff", inputs: map[string]any{"base": "$HTTP"}},
	{name: "retry_exhausted", inputs: map[string]any{"base": "$HTTP"}},
	{name: "on_error_continue"},
	{name: "on_error_route", inputs: map[string]any{"base": "$HTTP"}},
	{name: "timeout"},
	{name: "shell_exit_fail"},
	{name: "parallel_fail"},
	// Actions.
	{name: "http_post", inputs: map[string]any{"base": "$HTTP"}},
	{name: "http_404", inputs: map[string]any{"base": "$HTTP"}},
	{name: "shell_json"},
	{name: "shell_stdin_env"},
	{name: "llm_text"},
	{name: "mcp_tools"}, // @modelcontextprotocol/server-everything over stdio (make deps)
	// State, timers and signals.
	{name: "state_patch"},
	{name: "wait_duration", slowQueue: true},
	{name: "delay_directive", slowQueue: true},
	{name: "signal_wait", script: []action{{node: "approve", status: "waiting", pending: []string{"after"}, do: "signal", data: map[string]any{"approved": true, "by": "ada"}}}},
	{name: "signal_timeout", slowQueue: true},
	// Subworkflows and budgets.
	{name: "subworkflow_basic", childInputs: map[string]map[string]any{".slug1": {"title": "  Ten Things About Go  ", "pause": "0"}}}, // its default filled in
	{name: "subworkflow_nested"},
	{name: "subworkflow_waiting", inputs: map[string]any{"marker": "$TMP/m"},
		script: []action{{node: "slug", status: "waiting", do: "release"}}},
	{name: "subworkflow_fails"},
	{name: "budget_children"},
	// Big values: over the 64 KiB a value may take inline.
	{name: "big_output"},
	{name: "big_input", inputs: map[string]any{"text": bigText}},
	{name: "big_http", inputs: map[string]any{"base": "$HTTP"}},
	{name: "big_state"},
	// Webhooks: only a server has them.
	{name: "webhook_trigger", hook: &hookCall{trigger: "hook", body: `{"n": 7}`}, only: []string{"served", "queued"}},
	{name: "webhook_big", hook: &hookCall{trigger: "hook", body: `{"text": "` + strings.Repeat("w", 200_000) + `"}`}, only: []string{"served", "queued"}},
	// Secrets.
	{name: "secrets_masked", inputs: map[string]any{"base": "$HTTP"}, check: noSecretIn},
	{name: "secret_reads_success"},
	{name: "webhook_secret", hook: &hookCall{trigger: "hook", body: `{"n": 7, "token": "tok-5ecret-value"}`}, only: []string{"served", "queued"}, check: noSecretIn},
	{name: "llm_json"},
	{name: "agent_answer"},
	{name: "loop_foreach"},
	{name: "http_get_query", inputs: map[string]any{"base": "$HTTP"}},
	{name: "template_text"},
	{name: "retry_continue"},
	{name: "vars_overwrite"},
	{name: "route_join", inputs: map[string]any{"base": "$HTTP"}},
	{name: "wait_until_past"},
	// trace: nodes writes each node's run.json and events.jsonl in the
	// run's folder, on every configuration (made on demand for a served
	// run, by the following process for a queued one).
	{name: "trace_nodes", check: nodeFiles},
	// A killed owner: skein run is resumed, a server's takeover goes on,
	// new workers go on; what completed before the kill ran once.
	{name: "kill_resume", own: true, slowQueue: true, anyAttempts: []string{"hang"}, anyCached: true, inputs: map[string]any{"marker": "$TMP/m"},
		script: []action{{node: "hang", status: "running", do: "kill"}}, check: ranOnce},
	// A killed worker's loss is its own: the node running on the other
	// worker goes on untouched (on the queue; locally and on a server the
	// kill takes both, and a resume or takeover runs them again).
	{name: "kill_bystander", own: true, slowQueue: true, queues: []string{"a", "b,default"}, anyAttempts: []string{"victim", "bystander"}, anyCached: true,
		inputs: map[string]any{"marker": "$TMP/m"},
		script: []action{{node: "bystander", status: "running", do: "observe"}, {node: "victim", status: "running", do: "kill"}},
		check:  bystanderUntouched},
	// Directives, confidence and checks of a failed node.
	{name: "messages_directive", warnings: true},
	{name: "confidence", warnings: true},
	{name: "unknown_directive", warnings: true},
	{name: "checks_failed_node", verdict: true},
	// An expr check reads the run's inputs as a node does.
	{name: "checks_read_inputs", verdict: true, inputs: map[string]any{"n": 4}},
	// Cancel.
	{name: "cancel_unworked", own: true, noWorkers: true, only: []string{"queued"}, script: []action{{node: "start", status: "success", do: "cancel"}}},
	{name: "cancel_running", script: []action{{node: "busy", status: "running", do: "cancel"}}},
	{name: "cancel_waiting", script: []action{{node: "approve", status: "waiting", pending: []string{"after"}, do: "cancel"}}},
	{name: "cancel_let_finish", script: []action{{node: "busy", status: "running", do: "cancel-let-finish"}}},
}

// nodeFiles checks the node files of scenario trace_nodes: each node's
// run.json with its status and visits, and its events. They are written
// once the run's final record has committed, so they may come just after
// the run reads as ended.
func nodeFiles(t *testing.T, _ string, doc map[string]any) {
	dir := str(doc["dir"])
	require.NotEmpty(t, dir, mustJSON(t, doc))
	want := map[string]struct {
		status string
		visits int
	}{
		"start": {"success", 1}, "big": {"success", 1}, "taken": {"success", 1}, "missed": {"skipped", 1},
		"poll": {"success", 1}, "bump": {"success", 2}, "back": {"success", 2}, "report": {"success", 1},
	}
	// Every node's files, in whatever order the writer makes them.
	eventually(t, 60*time.Second, func() bool {
		for node := range want {
			for _, f := range []string{"run.json", "events.jsonl"} {
				if _, err := os.Stat(filepath.Join(dir, node, f)); err != nil {
					return false
				}
			}
		}
		return true
	}, "run %s: not every node's files in %s", doc["execution_id"], dir)
	for node, w := range want {
		var nr struct {
			Node   string           `json:"node"`
			Trace  string           `json:"trace"`
			Status string           `json:"status"`
			Visits []map[string]any `json:"visits"`
		}
		raw, err := os.ReadFile(filepath.Join(dir, node, "run.json"))
		require.NoError(t, err, node)
		require.NoError(t, json.Unmarshal(raw, &nr), node)
		require.Equal(t, node, nr.Node)
		require.Equal(t, "nodes", nr.Trace)
		require.Equal(t, w.status, nr.Status, node)
		require.Len(t, nr.Visits, w.visits, node)
		evs, err := os.ReadFile(filepath.Join(dir, node, "events.jsonl"))
		require.NoError(t, err, node)
		finished := strings.Count(string(evs), `"type":"node_finished"`)
		if w.status == "skipped" {
			require.Zero(t, finished, node)
		} else {
			require.Equal(t, w.visits, finished, "%s: one node_finished a visit", node)
		}
	}
}

// noSecretIn checks the run document holds no secret value.
func noSecretIn(t *testing.T, _ string, doc map[string]any) {
	require.NotContains(t, mustJSON(t, doc), "tok-5ecret-value")
}

// ranOnce checks the node before the kill ran once.
func ranOnce(t *testing.T, tmp string, _ map[string]any) {
	b, err := os.ReadFile(filepath.Join(tmp, "m.first"))
	require.NoError(t, err)
	require.Equal(t, "run\n", string(b), "the node that completed before the kill ran once")
}

// bystanderUntouched checks, on the queue, that the node on the worker
// that was not killed ran once, in one attempt, and never failed.
func bystanderUntouched(t *testing.T, tmp string, doc map[string]any) {
	if doc["generation"] != 1.0 {
		return // a resume or takeover ran the run again: both nodes were lost
	}
	b, err := os.ReadFile(filepath.Join(tmp, "m.bystander"))
	require.NoError(t, err)
	require.Equal(t, "run\n", string(b), "the bystander ran once")
	for _, s := range doc["steps"].([]any) {
		if s := s.(map[string]any); s["node"] == "bystander" {
			require.Equal(t, 1.0, s["attempts"], "the bystander's attempt was not counted lost")
		}
	}
}

func llmUsage(in, out int) llm.Usage { return llm.Usage{InputTokens: in, OutputTokens: out} }

// TestReadmeCountsTheScenarios: the README says how many scenarios the
// semantics contract holds; it is this table's length.
func TestReadmeCountsTheScenarios(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	require.Contains(t, strings.Join(strings.Fields(string(readme)), " "),
		fmt.Sprintf("semantics contract: %d scenarios,", len(scenarios)))
}
