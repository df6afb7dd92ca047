package server_test

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitingFor polls until node's step of run id waits.
func (s *served) waitingFor(id, node string) map[string]any {
	s.t.Helper()
	return s.until(id, node+" waiting", func(doc map[string]any) bool {
		st := step(doc, node)
		return st != nil && st["status"] == "waiting"
	})
}

func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "%v is not a time", v)
	tm, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return tm
}

// TestApprovalAcrossARestart (issue 13, acceptance 5): the run waits for
// its approval held by nothing — the server stops and the run is still
// waiting, not interrupted —, a new server starts, the signal arrives
// through the API, and the run completes with the signal's data.
func TestApprovalAcrossARestart(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	id := s.start("approval", map[string]any{"text": "ship it"})
	doc := s.until(id, "waiting", func(doc map[string]any) bool { return doc["status"] == "waiting" })
	require.Nil(t, doc["owner"], "no process holds a waiting run")
	approve := step(doc, "approve")
	require.Equal(t, "waiting", approve["status"])
	wake := parseTime(t, approve["wake_at"])
	require.WithinDuration(t, time.Now().Add(time.Hour), wake, time.Minute, "its timeout")
	require.Equal(t, doc["wake_at"], approve["wake_at"])
	require.Equal(t, "success", step(doc, "draft")["status"])
	send := step(doc, "send")
	require.Equal(t, "pending", send["status"], "nothing after the wait ran; it is planned")
	require.Nil(t, send["ran_on"])
	require.Nil(t, send["started_at"])
	host, err := os.Hostname()
	require.NoError(t, err)
	require.Equal(t, host, step(doc, "draft")["ran_on"].(map[string]any)["host"], "where the step ran")
	require.NotZero(t, step(doc, "draft")["ran_on"].(map[string]any)["pid"])
	require.Nil(t, step(doc, "draft")["ran_on"].(map[string]any)["worker"], "no queue worker ran it")
	require.Less(t, step(doc, "draft")["step_order"], approve["step_order"])
	require.Less(t, approve["step_order"], send["step_order"])
	list := s.admin("GET", "/api/runs?status=waiting", nil, http.StatusOK)
	require.Len(t, list["runs"], 1)

	require.Equal(t, 0, s.stop(syscall.SIGTERM), s.log())
	s2 := serve(t, serveOpts{dir: s.dir, flows: s.flows})
	doc = s2.admin("GET", "/api/runs/"+id, nil, http.StatusOK)
	require.Equal(t, "waiting", doc["status"], "the stopped server left it waiting, not interrupted")

	p := s2.admin("POST", "/api/runs/"+id+"/signals/send", map[string]any{}, http.StatusConflict)
	require.Equal(t, "not_waiting", p["code"])
	p = s2.admin("POST", "/api/runs/"+id+"/signals/nope", nil, http.StatusNotFound)
	require.Equal(t, "not_found", p["code"])
	p = s2.admin("POST", "/api/runs/000000000000/signals/approve", nil, http.StatusNotFound)
	require.Equal(t, "not_found", p["code"])
	s2.admin("POST", "/api/runs/"+id+"/signals/approve", "{not json", http.StatusBadRequest)

	a := s2.do("POST", "/api/runs/"+id+"/signals/approve", s2.token, map[string]any{"approved": true, "by": "Ada", "n": 2})
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	require.Equal(t, "/api/runs/"+id, a.header.Get("Location"))
	ans := a.json(t)
	require.Equal(t, id, ans["execution_id"])
	require.Equal(t, "approve", ans["node"])
	require.Equal(t, float64(1), ans["visit"])
	require.Equal(t, id, ans["run"].(map[string]any)["execution_id"])

	doc = s2.ended(id)
	require.Equal(t, "completed", doc["status"], "%v", doc["error"])
	outs := doc["outputs"].(map[string]any)
	require.Equal(t, "ship it, approved by Ada", outs["message"])
	require.Equal(t, map[string]any{"approved": true, "by": "Ada", "n": float64(2)}, outs["approval"])
	require.Equal(t, "success", step(doc, "draft")["status"])
	require.Equal(t, false, step(doc, "draft")["cached"], "the run went on after its signal: its steps are its own, not cached")
	out := step(doc, "approve")["output"].(map[string]any)
	require.Equal(t, false, out["timed_out"])
	require.NotEmpty(t, out["signaled_at"])
	require.Equal(t, "skipped", step(doc, "expired")["status"])

	p = s2.admin("POST", "/api/runs/"+id+"/signals/approve", map[string]any{"by": "Bo"}, http.StatusConflict)
	require.Equal(t, "completed", p["code"])
	events := s2.readEvents(t, id, "", func(sse) bool { return false })
	var types []string
	for _, e := range events {
		types = append(types, e.event)
	}
	require.Contains(t, types, "signal_awaited")
	require.Contains(t, types, "execution_parked")
	require.Contains(t, types, "signal_received")
}

// TestALateSignal: without a signal within its second, the wait takes its
// timeout handle; a signal then finds nothing waiting.
func TestALateSignal(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	id := s.start("approval_quick", nil)
	doc := s.ended(id)
	require.Equal(t, "completed", doc["status"])
	require.Equal(t, "not approved in time", doc["outputs"].(map[string]any)["message"])
	require.Equal(t, true, doc["outputs"].(map[string]any)["timed_out"])
	require.Equal(t, "skipped", step(doc, "send")["status"])
	p := s.admin("POST", "/api/runs/"+id+"/signals/approve", map[string]any{"by": "Late"}, http.StatusConflict)
	require.Equal(t, "completed", p["code"])
}

// TestAWaitOutlivesAKilledServer: a wait's wake-up time is stored. A run
// parked on a 3 s wait (--park-after 1s) survives a kill -9 and the next
// server wakes it at the time it was due (it is not taken over: it
// waits); a run held in its process on the same wait is left running by
// the kill, the next server takes it over on start, and the resume keeps
// the wake-up time too.
func TestAWaitOutlivesAKilledServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		parked bool
	}{
		{"parked", []string{"--park-after", "1s"}, true},
		{"held", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, serveOpts{args: tc.args})
			id := s.start("pause", map[string]any{"wait": "3s"})
			doc := s.waitingFor(id, "pause")
			wake := parseTime(t, step(doc, "pause")["wake_at"])
			if tc.parked {
				doc = s.until(id, "parked", func(doc map[string]any) bool { return doc["status"] == "waiting" })
				require.Equal(t, step(doc, "pause")["wake_at"], doc["wake_at"])
			}
			require.Equal(t, -1, s.stop(syscall.SIGKILL))

			s2 := serve(t, serveOpts{dir: s.dir, flows: s.flows, args: tc.args})
			if !tc.parked {
				s2.until(id, "taken over", func(doc map[string]any) bool { return doc["generation"] == float64(2) })
			}
			doc = s2.ended(id)
			require.Equal(t, "completed", doc["status"], "%v", doc["error"])
			if tc.parked {
				require.Empty(t, s2.logged("run taken over"), "a waiting run is not taken over")
				require.Len(t, s2.logged("run woken"), 1)
			} else {
				require.Len(t, s2.logged("run taken over"), 1)
				require.Empty(t, s2.logged("run woken"))
			}
			pause := step(doc, "pause")
			require.Equal(t, wake, parseTime(t, pause["wake_at"]), "the wait kept its wake-up time")
			require.False(t, parseTime(t, pause["finished_at"]).Before(wake), "and did not end before it")
			require.Equal(t, "success", step(doc, "done")["status"])
		})
	}
}

// TestSignalReachesARunOfTheCLI: a `skein run` in a terminal holds a wait
// whose timeout is under a minute; a signal — through the API of a server
// on the same folder, or `skein signal` in another terminal — reaches it
// through the store.
func TestSignalReachesARunOfTheCLI(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"api", "skein signal"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			s := serve(t, serveOpts{})
			flow := filepath.Join(s.tmp, "held.yaml")
			require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: held
nodes:
  - {id: approve, type: wait, until: signal, timeout: 30s}
  - {id: send, type: template, text: "approved by {{ approve.data.by }}"}
edges:
  - {from: approve, to: send}
outputs:
  message: "{{ send.text }}"
`), 0o644))
			cmd := exec.Command(bin, "run", "--dir", s.dir, "--output", "json", flow)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })

			var id string
			deadline := time.Now().Add(30 * time.Second)
			for id == "" {
				list := s.admin("GET", "/api/runs?workflow=held", nil, http.StatusOK)
				if runs := list["runs"].([]any); len(runs) > 0 {
					id = runs[0].(map[string]any)["execution_id"].(string)
				}
				require.True(t, time.Now().Before(deadline), "the CLI's run did not show up")
				time.Sleep(20 * time.Millisecond) // polling another process: nothing to wait on
			}
			doc := s.waitingFor(id, "approve")
			require.Equal(t, "running", doc["status"], "the CLI holds it")
			require.NotNil(t, doc["owner"])
			if via == "api" {
				ans := s.admin("POST", "/api/runs/"+id+"/signals/approve", map[string]any{"by": "Ada"}, http.StatusAccepted)
				require.Equal(t, "running", ans["run"].(map[string]any)["status"], "left to its owner")
			} else {
				sig, err := exec.Command(bin, "signal", "--dir", s.dir, "-o", "json", id, "approve", "--data", `{"by": "Ada"}`).Output()
				require.NoError(t, err)
				require.Contains(t, string(sig), `"applied_by": "pid `, "left to its owner")
			}

			select {
			case err := <-exited:
				require.NoError(t, err, errb.String())
			case <-time.After(30 * time.Second):
				t.Fatalf("skein run did not take the signal:\n%s", errb.String())
			}
			require.Contains(t, out.String(), `"message": "approved by Ada"`)
		})
	}
}
