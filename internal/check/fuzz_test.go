package check_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/workflow"
)

// FuzzTarget feeds arbitrary outputs, targets and values to the
// target-reading checks: each must end in a verdict with a reason, never
// panic.
func FuzzTarget(f *testing.F) {
	f.Add(`{"body":{"items":[1,2,{"id":"x"}]},"stdout":"hello"}`, "body.items.2.id", "x", `^h`)
	f.Add(`{"a":[[]]}`, "a.0.0", "", `(`)
	f.Add(`{"a":null}`, "a..b", `"`, `\`)
	f.Add(`{}`, "{{ a }}", "{{", `.*`)
	f.Add(`{"status":"2xx"}`, "status", "2", `\d`)
	f.Fuzz(func(t *testing.T, output, target, value, pattern string) {
		var out map[string]any
		if json.Unmarshal([]byte(output), &out) != nil {
			return
		}
		out["success"] = true
		params := func(extra map[string]any) map[string]any {
			p := map[string]any{"target": target}
			for k, v := range extra {
				p[k] = v
			}
			return p
		}
		w := &workflow.Workflow{Nodes: []*workflow.Node{nd("n",
			warn(chk("contains", "c", params(map[string]any{"value": value}))),
			warn(chk("not_contains", "nc", params(map[string]any{"value": value}))),
			warn(chk("regex", "re", params(map[string]any{"pattern": pattern}))),
			warn(chk("json_schema", "js", params(map[string]any{"schema": map[string]any{"type": "string", "pattern": pattern}}))),
			warn(chk("http_status", "hs", map[string]any{"status": value})),
		)}}
		v := check.Evaluate(context.Background(), check.Input{Workflow: w, Result: result(ok("n", 1, 1, out))})
		require.Len(t, v.Nodes, 1)
		for _, r := range v.Nodes[0].Checks {
			require.Contains(t, []check.Verdict{check.Pass, check.Warn, check.Error}, r.Verdict, "%s", r.Check)
			require.NotEmpty(t, r.Reasoning, "%s", r.Check)
		}
		require.NotEqual(t, check.StatusFailed, v.Status, "warn checks never fail the run")
	})
}
