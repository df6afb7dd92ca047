package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSignalWithoutAServer: `skein run` leaves a run that waits for an
// approval waiting (exit 4, saying how to send it), and `skein signal`
// records the approval and finishes the run in its own process.
func TestSignalWithoutAServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "approval.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: approval
nodes:
  - {id: draft, type: template, text: "hello"}
  - {id: approve, type: wait, until: signal, timeout: 24h}
  - {id: send, type: template, text: "{{ draft.text }}, approved by {{ approve.data.by }}"}
  - {id: expired, type: template, text: "not approved in time"}
edges:
  - {from: draft, to: approve}
  - {from: approve, to: send}
  - {from: approve, to: expired, on: timeout}
outputs:
  message: "{{ send.text ?? expired.text }}"
`), 0o644))
	skeinDir := filepath.Join(dir, ".skein")

	r := skein(t, "run", "--dir", skeinDir, "--output", "json", flow)
	require.Equal(t, 4, r.code, "waiting: exit 4\n%s", r.stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Equal(t, "waiting", doc["status"])
	id := doc["execution_id"].(string)

	r = skein(t, "run", "--dir", skeinDir, flow)
	require.Equal(t, 4, r.code)
	require.Contains(t, r.stdout, "⏸ approve")
	require.Contains(t, r.stdout, "waits for a signal")
	require.Regexp(t, `run [0-9a-f]+ waiting`, r.stdout)
	require.Regexp(t, `approve waits for a signal: skein signal [0-9a-f]+ approve --dir \S+ --data`, r.stdout, "with the --dir it was run with")

	list := skein(t, "runs", "list", "--dir", skeinDir, "--status", "waiting")
	require.Equal(t, 0, list.code, list.stderr)
	require.Contains(t, list.stdout, id)
	require.Contains(t, list.stdout, "or a signal")

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad data", []string{"--data", "{oops"}, "--data is not JSON"},
		// Refused as the API refuses it, and not recorded: Ada's signal
		// below is the one the run takes.
		{"a number beyond a float", []string{"--data", `{"by": "Bob", "n": 1e400}`}, "--data: the number 1e400 is beyond what a run holds (a 64-bit float)"},
		{"unknown node", []string{"--data", "{}"}, `no node "nope"`},
		{"not waiting", []string{}, "not waiting for a signal"},
	} {
		node := "approve"
		switch tc.name {
		case "unknown node":
			node = "nope"
		case "not waiting":
			node = "send"
		}
		r := skein(t, append([]string{"signal", "--dir", skeinDir, id, node}, tc.args...)...)
		require.Equal(t, 2, r.code, tc.name)
		require.Contains(t, r.stderr, tc.want, tc.name)
	}

	r = skein(t, "signal", "--dir", skeinDir, id, "approve", "--data", `{"by": "Ada"}`)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "signal recorded for approve (visit 1) of run "+id)
	require.Contains(t, r.stdout, "resuming run "+id)
	require.Contains(t, r.stdout, "run "+id+" completed")
	require.Contains(t, r.stdout, `"message": "hello, approved by Ada"`)

	r = skein(t, "signal", "--dir", skeinDir, id, "approve", "--data", `{"by": "Bo"}`)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "completed")

	show := skein(t, "runs", "show", "--dir", skeinDir, "-o", "json", id)
	require.Equal(t, 0, show.code, show.stderr)
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &doc))
	require.Equal(t, "completed", doc["status"])
	text := skein(t, "runs", "show", "--dir", skeinDir, id)
	require.Equal(t, 0, text.code, text.stderr)
	require.NotContains(t, text.stdout, "cached", "no step of a run that went on after its signal reads as reused")
	for _, s := range doc["steps"].([]any) {
		st := s.(map[string]any)
		if st["node"] == "draft" {
			require.Equal(t, "success", st["status"])
			require.Equal(t, false, st["cached"], "the run went on after its signal: draft is as it was, not cached")
		}
	}
}

// TestApprovalExample runs examples/approval.yaml: approved, it sends;
// refused, it does not.
func TestApprovalExample(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		data, want string
	}{
		{`{"approved": true, "by": "Grace"}`, "To ada@example.com: the release is ready. (approved by Grace)"},
		{`{"approved": false, "by": "Linus"}`, "not sent: Linus said no"},
	} {
		dir := t.TempDir()
		r := skein(t, "run", "--dir", dir, "-o", "json", "../../examples/approval.yaml", "-i", "to=ada@example.com")
		require.Equal(t, 4, r.code, r.stderr)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
		r = skein(t, "signal", "--dir", dir, "-o", "json", doc["execution_id"].(string), "approve", "--data", tc.data)
		require.Equal(t, 0, r.code, r.stderr)
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
		require.Equal(t, "completed", doc["status"])
		require.Equal(t, tc.want, doc["outputs"].(map[string]any)["result"])
	}
}

// TestRunsListNamesTheNodeToSignal: runs list gives a run that waits for
// a signal the command that sends it, with the node that waits, or the
// nodes when several do.
func TestRunsListNamesTheNodeToSignal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	one := filepath.Join(dir, "one.yaml")
	require.NoError(t, os.WriteFile(one, []byte(`version: 1
name: one
nodes:
  - {id: approve, type: wait, until: signal}
  - {id: send, type: template, text: sent}
edges:
  - {from: approve, to: send}
`), 0o644))
	two := filepath.Join(dir, "two.yaml")
	require.NoError(t, os.WriteFile(two, []byte(`version: 1
name: two
nodes:
  - {id: legal, type: wait, until: signal}
  - {id: finance, type: wait, until: signal}
`), 0o644))
	skeinDir := filepath.Join(dir, ".skein")
	ids := map[string]string{}
	for name, flow := range map[string]string{"one": one, "two": two} {
		r := skein(t, "run", "--dir", skeinDir, "--output", "json", flow)
		require.Equal(t, 4, r.code, "waiting: exit 4\n%s", r.stderr)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
		ids[name] = doc["execution_id"].(string)
	}
	list := skein(t, "runs", "list", "--dir", skeinDir)
	require.Equal(t, 0, list.code, list.stderr)
	require.Contains(t, list.stdout, "waiting (for a signal: skein signal "+ids["one"]+" approve)")
	require.Regexp(t, `waiting \(for a signal to (legal, finance|finance, legal): skein signal `+ids["two"]+` NODE\)`, list.stdout)
}

// TestSignalWhoseResumeLacksASecret: a signal to a waiting run is
// recorded even when this process cannot go on with the run (a secret of
// the workflow is not set here); the run is left waiting, not taken, and
// the command says how to continue it once the secret is set.
func TestSignalWhoseResumeLacksASecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "sig.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: sig
secrets: [TOKEN]
nodes:
  - {id: approve, type: wait, until: signal}
  - {id: after, type: set, values: {by: "{{ approve.data.by }}"}}
edges:
  - {from: approve, to: after}
outputs:
  by: "{{ after.by }}"
`), 0o644))
	store := filepath.Join(dir, "store")
	with := map[string]string{"SKEIN_SECRET_TOKEN": "s3cret"}
	r := skeinIn(t, dir, with, "run", "--dir", store, "--output", "json", flow)
	require.Equal(t, 4, r.code, r.stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	id := doc["execution_id"].(string)

	r = skeinIn(t, dir, nil, "signal", "--dir", store, id, "approve", "--data", `{"by": "Ada"}`)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stdout, "signal recorded for approve (visit 1) of run "+id)
	require.Contains(t, r.stderr, "secret TOKEN is not set")
	require.Contains(t, r.stderr, "the signal is kept: once that is fixed, skein resume "+id+" --dir "+store+" continues the run with it")
	list := skeinIn(t, dir, nil, "runs", "list", "--dir", store, "--status", "waiting")
	require.Equal(t, 0, list.code, list.stderr)
	require.Contains(t, list.stdout, id, "the run still waits, held by nobody")

	r = skeinIn(t, dir, with, "resume", "--dir", store, "--output", "json", id)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Equal(t, "completed", doc["status"])
	require.Equal(t, map[string]any{"by": "Ada"}, doc["outputs"])
}
