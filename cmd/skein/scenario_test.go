package main_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm/llmtest"
	skeinproc "github.com/skeinhq/skein/internal/proc"
)

// The semantics contract: one table of scenarios (scenarios_table_test.go),
// each a workflow of testdata/scenarios with its inputs, the fixtures it
// calls (a fake HTTP service and a fake OpenAI-compatible model on
// loopback) and what a user does while it runs (cancel, signal), run on
// three configurations:
//
//   - local:  `skein run` on SQLite (the local driver);
//   - served: a run started through `skein serve`'s API with its default
//     flags (SQLite, run folders on demand);
//   - queued: `skein serve --queue` and two `skein worker`s on Postgres
//     (the queue driver).
//
// Each configuration's run is normalised (run status, error code,
// outputs; per step: node, status, visit, iteration, attempts, output,
// error code, skip reason and the handle a branch took instead; blob
// references by digest, volatile keys like HTTP headers dropped) and must
// equal the scenario's golden file,
// testdata/scenarios/want/<name>.json. `go test -run TestScenarios/local
// -update-scenarios` writes the goldens from the local configuration
// (from the first configuration of a scenario that does not run locally); a
// changed golden is a change of semantics, reviewed as such. What the
// golden cannot hold is checked on every run (checkStepLog): the steps
// are listed by step_order, no step of an ended run is pending, and each
// step that started says where it ran — on the queue, which worker.

var updateScenarios = flag.Bool("update-scenarios", false, "write testdata/scenarios/want/*.json from the local configuration (or a scenario's first)")

const scenarioDir = "testdata/scenarios"

// scenario is one row of the table.
type scenario struct {
	name string // testdata/scenarios/<name>.yaml, whose workflow is named <name>
	// inputs are the run's inputs; a string "$HTTP" in them is replaced by
	// the URL of the fake HTTP service.
	inputs map[string]any
	// hook, when set, starts the run through a webhook: POST
	// /hooks/<name>/<hook.trigger> with hook.body. Only the served
	// configurations have webhooks.
	hook *hookCall
	// script is what the user does while the run goes on, in order: each
	// action waits until its condition holds.
	script []action
	// order lists pairs of nodes whose first steps are recorded in this
	// order (step_order) on every configuration.
	order [][2]string
	// only, when set, names the configurations the scenario runs on
	// (local, served, queued); the note says why the others cannot.
	only []string
	// check, when set, asserts what the normalised result cannot hold.
	check func(t *testing.T, tmp string, doc map[string]any)
	// childInputs are the inputs each child run shows, by the suffix of
	// its id after the run's (".slug1": node slug's first child run).
	childInputs map[string]map[string]any
	// anyVisit drops the visit numbers of steps: items of a foreach with
	// concurrency take their visits in the order they start.
	anyVisit bool
	// anyAttempts names nodes whose attempt count depends on how the
	// configuration goes on after a kill: a resume starts the step again,
	// a takeover runs it again, a worker's loss costs it an attempt.
	anyAttempts []string
	// anyCached drops whether steps were reused: after a kill, a resume
	// reuses what completed (cached) where the queue's new workers go on
	// from its history.
	anyCached bool
	// warnings puts the run's warning events in the golden.
	warnings bool
	// verdict waits, once the run ended, for its checks' verdict (a
	// queued run's checks run after it ends).
	verdict bool
	// own gives the scenario a configuration of its own (a server, workers
	// and a database no other scenario uses): it kills them. noWorkers
	// starts the queued configuration without workers.
	own, noWorkers bool
	// queues, when set, gives the queued configuration one worker per
	// entry, serving those queues (--queues); a kill then kills the first
	// worker only, and the recovery starts it again.
	queues []string
	// slowQueue marks scenarios that wait on River's scheduled jobs on
	// the queue (a scheduled job is made available within 5 s).
	slowQueue bool
}

type hookCall struct {
	trigger string
	body    string
}

// action is a step of a scenario's script: when node's step reaches
// status (any visit), do it.
type action struct {
	node, status string
	// do: cancel, cancel-let-finish, signal, observe (nothing: the
	// condition is what is checked), release (create the file <marker
	// input>.go, which the scenario's commands wait for), or kill (SIGKILL
	// the process that runs the node: skein run, skein serve, the
	// workers), then release, then recover (skein resume, a new skein
	// serve on the same folder, new workers).
	do   string
	data any // a signal's data
	// pending names the nodes that must have a pending step (planned,
	// not started) when the condition holds.
	pending []string
}

// target is one configuration.
type target interface {
	start(t *testing.T, sc *scenario, inputs map[string]any) string
	show(t *testing.T, id string) map[string]any
	cancel(t *testing.T, id string, letFinish bool)
	signal(t *testing.T, id, node string, data any)
	kill(t *testing.T, id string)
	recover(t *testing.T, id string)
	// events returns an ended run's events.
	events(t *testing.T, id string) []map[string]any
}

// scenarioEnv holds the fixtures every configuration shares.
type scenarioEnv struct {
	http *fakeService
	llm  *llmtest.Server
	env  []string // SKEIN_LLM_* and the secrets, added to every skein process's environment
}

func TestScenarios(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t)
	targets := map[string]func(t *testing.T, queues []string) target{
		"local":  func(t *testing.T, _ []string) target { return newLocalTarget(t, env) },
		"served": func(t *testing.T, _ []string) target { return newServedTarget(t, env, "", nil) },
		"queued": func(t *testing.T, queues []string) target { return newServedTarget(t, env, pgURL(t), queues) },
	}
	// Two workers of the default queue.
	twoWorkers := []string{queueDefault, queueDefault}
	for _, cfg := range []string{"local", "served", "queued"} {
		t.Run(cfg, func(t *testing.T) {
			t.Parallel()
			tg := targets[cfg](t, twoWorkers)
			// Scenarios mostly wait (on sleeps, timers, the queue): more
			// run at once than -parallel (GOMAXPROCS) would allow.
			sem := make(chan struct{}, 6)
			var wg sync.WaitGroup
			for i := range scenarios {
				sc := &scenarios[i]
				if sc.only != nil && !slices.Contains(sc.only, cfg) {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					t.Run(sc.name, func(t *testing.T) {
						tg := tg
						if sc.own {
							queues := twoWorkers
							switch {
							case sc.noWorkers:
								queues = nil
							case sc.queues != nil:
								queues = sc.queues
							}
							tg = targets[cfg](t, queues)
						}
						runScenario(t, env, tg, cfg, sc)
					})
				}()
			}
			wg.Wait()
		})
	}
}

// runScenario runs sc on tg and compares its normalised result with the
// golden.
func runScenario(t *testing.T, env *scenarioEnv, tg target, cfg string, sc *scenario) {
	tmp := t.TempDir()
	in := inputsOf(env, sc, tmp)
	id := tg.start(t, sc, in)
	for _, a := range sc.script {
		var last map[string]any
		eventually(t, 60*time.Second, func() bool {
			last = tg.show(t, id)
			return stepReached(last, a.node, a.status)
		}, "%s: run %s: step %s never became %s: %s", cfg, id, a.node, a.status, mustJSON(t, last))
		for _, p := range a.pending {
			require.True(t, stepReached(last, p, "pending"), "%s: run %s: while %s is %s, %s is planned (pending): %s",
				cfg, id, a.node, a.status, p, mustJSON(t, last))
		}
		switch a.do {
		case "cancel":
			tg.cancel(t, id, false)
		case "cancel-let-finish":
			tg.cancel(t, id, true)
		case "signal":
			tg.signal(t, id, a.node, a.data)
		case "observe": // the condition is what the scenario checks
		case "kill":
			tg.kill(t, id)
			release(t, in)
			tg.recover(t, id)
		case "release":
			release(t, in)
		default:
			t.Fatalf("unknown action %q", a.do)
		}
	}
	var doc map[string]any
	limit := 60 * time.Second
	if sc.slowQueue {
		limit = 120 * time.Second
	}
	eventually(t, limit, func() bool {
		doc = tg.show(t, id)
		switch doc["status"] {
		case "completed", "failed", "cancelled":
			return !sc.verdict || doc["verdict"] != nil
		}
		return false
	}, "%s: run %s did not end: %s", cfg, id, mustJSON(t, doc))
	got := normalise(doc, strings.NewReplacer(env.http.srv.URL, "$HTTP", id, "$RUN", tmp, "$TMP"), sc.anyVisit, sc.anyAttempts)
	if sc.anyCached {
		for i := range got.Steps {
			got.Steps[i].Cached = false
		}
	}
	if sc.warnings {
		got.Warnings = warningsOf(tg.events(t, id))
	}
	file := filepath.Join(scenarioDir, "want", sc.name+".json")
	if *updateScenarios && writesGolden(sc, cfg) {
		b, err := json.MarshalIndent(got, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(file, append(b, '\n'), 0o644))
	}
	raw, err := os.ReadFile(file)
	require.NoError(t, err, "the golden of scenario %s (write it with -update-scenarios)", sc.name)
	var want normRun
	require.NoError(t, json.Unmarshal(raw, &want))
	require.Equal(t, indented(t, want), indented(t, got), "%s: scenario %s (run %s) differs from %s", cfg, sc.name, id, file)
	checkStepLog(t, cfg, doc)
	for _, o := range sc.order {
		a, b := firstStep(doc, o[0]), firstStep(doc, o[1])
		require.True(t, a >= 0 && b >= 0 && a < b, "%s: %s's first step must come before %s's", cfg, o[0], o[1])
	}
	for suffix, want := range sc.childInputs {
		require.Equal(t, want, tg.show(t, id+suffix)["inputs"], "%s: the inputs of child run %s%s", cfg, id, suffix)
	}
	if sc.check != nil {
		sc.check(t, tmp, doc)
	}
}

// checkStepLog checks what every ended run's step log holds: its steps in
// step_order, each numbered once from 1; no step pending; a step that
// started says where it ran (host and process), one that never started
// (skipped, or cancelled before it started) does not; on the queue the
// steps a worker ran name the worker, elsewhere none does.
func checkStepLog(t *testing.T, cfg string, doc map[string]any) {
	steps, _ := doc["steps"].([]any)
	last := 0
	for _, s := range steps {
		s := s.(map[string]any)
		name := fmt.Sprintf("%s: step %v/%v (%v)", cfg, s["node"], s["visit"], s["status"])
		order := num(s["step_order"])
		require.Greater(t, order, last, "%s: steps are listed by step_order, each once", name)
		last = order
		require.NotEqual(t, "pending", s["status"], "%s: an ended run has no pending step", name)
		ran, _ := s["ran_on"].(map[string]any)
		if s["started_at"] == nil {
			require.Nil(t, ran, "%s never started: it ran nowhere", name)
			continue
		}
		require.NotNil(t, ran, "%s started: it says where it ran", name)
		require.NotEmpty(t, ran["host"], name)
		require.NotZero(t, num(ran["pid"]), name)
		switch {
		case cfg != "queued":
			require.Nil(t, ran["worker"], "%s: no queue worker", name)
		case !strings.HasPrefix(str(s["type"]), "trigger."):
			// A trigger's step is recorded where the run was queued.
			require.NotEmpty(t, ran["worker"], "%s: the worker that ran it", name)
		}
	}
}

// release creates the file <marker input>.go that a scenario's commands
// wait for.
func release(t *testing.T, inputs map[string]any) {
	marker, _ := inputs["marker"].(string)
	require.NotEmpty(t, marker, "the scenario has a marker input")
	require.NoError(t, os.WriteFile(marker+".go", nil, 0o644))
}

// writesGolden reports whether -update-scenarios writes sc's golden from
// configuration cfg: the first configuration sc runs on.
func writesGolden(sc *scenario, cfg string) bool {
	if sc.only != nil {
		return sc.only[0] == cfg
	}
	return cfg == "local"
}

func indented(t *testing.T, v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return string(b)
}

// stepReached reports whether a step of node has status.
func stepReached(doc map[string]any, node, status string) bool {
	steps, _ := doc["steps"].([]any)
	for _, s := range steps {
		s, _ := s.(map[string]any)
		if s["node"] == node && s["status"] == status {
			return true
		}
	}
	return false
}

// firstStep is the position of node's first step in step_order, -1 when
// it has none.
func firstStep(doc map[string]any, node string) int {
	steps, _ := doc["steps"].([]any)
	for i, s := range steps {
		if s.(map[string]any)["node"] == node {
			return i
		}
	}
	return -1
}

// normRun is a run as the contract compares it.
type normRun struct {
	Status  string     `json:"status"`
	Error   string     `json:"error,omitempty"`
	Outputs any        `json:"outputs"`
	Steps   []normStep `json:"steps"`
	// Warnings are the warning events (scenario.warnings), as
	// "node: message", sorted.
	Warnings []string `json:"warnings,omitempty"`
	// Checks are the verdicts of the run's checks, as "node › check:
	// verdict", and the verdict's status.
	Checks []string `json:"checks,omitempty"`
}

// warningsOf lists the warning events of evs as "node: message", sorted.
func warningsOf(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		if ev["type"] != "warning" {
			continue
		}
		data, _ := ev["data"].(map[string]any)
		out = append(out, str(ev["node"])+": "+str(data["message"]))
	}
	slices.Sort(out)
	return out
}

// checksOf lists a run document's check verdicts.
func checksOf(doc map[string]any) []string {
	v, _ := doc["verdict"].(map[string]any)
	if v == nil || str(v["status"]) == "" {
		return nil
	}
	out := []string{"status: " + str(v["status"])}
	nodes, _ := v["nodes"].([]any)
	for _, n := range nodes {
		checks, _ := n.(map[string]any)["checks"].([]any)
		for _, c := range checks {
			c := c.(map[string]any)
			out = append(out, str(c["node"])+" › "+str(c["check"])+": "+str(c["verdict"]))
		}
	}
	return out
}

type normStep struct {
	Node        string `json:"node"`
	Status      string `json:"status"`
	Visit       int    `json:"visit"`
	Iteration   int    `json:"iteration"`
	Attempts    int    `json:"attempts"`
	Output      any    `json:"output"`
	Error       string `json:"error,omitempty"`
	SkipReason  string `json:"skip_reason,omitempty"`
	TakenHandle string `json:"taken_handle,omitempty"`
	// Cached marks a step reused from an earlier execution (resume,
	// rerun), never one a run kept as it went on after a signal or timer.
	Cached bool `json:"cached,omitempty"`
	// Confidence is the confidence_score the node reported.
	Confidence any `json:"confidence_score,omitempty"`
}

// volatileKeys are output keys whose values differ from run to run.
var volatileKeys = map[string]bool{"headers": true, "waited_ms": true, "signaled_at": true}

// normalise reads a run document as the contract compares it: names
// replaces what differs from run to run in texts (the fake service's URL,
// the run's id), anyVisit drops the steps' visit numbers and anyAttempts
// the attempt counts of those nodes.
func normalise(doc map[string]any, names *strings.Replacer, anyVisit bool, anyAttempts []string) normRun {
	normValue := func(v any) any { return normValue(v, names) }
	r := normRun{Status: str(doc["status"]), Outputs: normValue(doc["outputs"]), Checks: checksOf(doc)}
	if e, ok := doc["error"].(map[string]any); ok {
		r.Error = str(e["code"])
	}
	steps, _ := doc["steps"].([]any)
	for _, s := range steps {
		s := s.(map[string]any)
		ns := normStep{Node: str(s["node"]), Status: str(s["status"]), Visit: num(s["visit"]),
			Iteration: num(s["iteration"]), Attempts: num(s["attempts"]), Output: normValue(s["output"]),
			SkipReason: str(s["skip_reason"]), TakenHandle: str(s["taken_handle"]), Cached: s["cached"] == true, Confidence: s["confidence_score"]}
		if e, ok := s["error"].(map[string]any); ok {
			ns.Error = str(e["code"])
		}
		if anyVisit {
			ns.Visit = 0
		}
		if slices.Contains(anyAttempts, ns.Node) {
			ns.Attempts = 0
		}
		r.Steps = append(r.Steps, ns)
	}
	slices.SortStableFunc(r.Steps, func(a, b normStep) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		if a.Iteration != b.Iteration {
			return a.Iteration - b.Iteration
		}
		return a.Visit - b.Visit
	})
	return r
}

// normValue drops volatile keys and the place of blob references.
func normValue(v any, names *strings.Replacer) any {
	switch v := v.(type) {
	case string:
		if len(v) > 1000 { // a long text inline: its digest keeps the golden small
			sum := sha256.Sum256([]byte(v))
			return fmt.Sprintf("<%d bytes, sha256 %x>", len(v), sum[:8])
		}
		return names.Replace(v)
	case map[string]any:
		if ref, ok := v["$skein.blob"].(map[string]any); ok {
			return map[string]any{"$skein.blob": map[string]any{"sha256": ref["sha256"], "size": ref["size"], "type": ref["type"]}}
		}
		out := map[string]any{}
		for k, x := range v {
			if !volatileKeys[k] {
				out[k] = normValue(x, names)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normValue(x, names)
		}
		return out
	}
	return v
}

func str(v any) string { s, _ := v.(string); return s }
func num(v any) int    { f, _ := v.(float64); return int(f) }

// inputsOf returns sc's inputs with $HTTP replaced by the fake service's
// URL and $TMP by tmp, a folder of the scenario's own.
func inputsOf(env *scenarioEnv, sc *scenario, tmp string) map[string]any {
	in := map[string]any{}
	for k, v := range sc.inputs {
		if s, ok := v.(string); ok {
			v = strings.NewReplacer("$HTTP", env.http.srv.URL, "$TMP", tmp).Replace(s)
		}
		in[k] = v
	}
	return in
}

func newScenarioEnv(t *testing.T) *scenarioEnv {
	env := &scenarioEnv{http: newFakeService(t)}
	// The model answers each prompt with what it was asked, so every
	// run's answers are the same whichever order the runs ask in.
	env.llm = llmtest.NewResponder(t, llmtest.OpenAI, func(r *llmtest.Request) llmtest.Turn {
		last := ""
		if n := len(r.Messages); n > 0 {
			last = r.Messages[n-1].Content
		}
		if r.Schema != nil {
			if props, _ := r.Schema["properties"].(map[string]any); props["confidence"] != nil {
				return llmtest.Turn{Text: `{"answer": "yes", "confidence": 0.9}`, Usage: llmUsage(10, 5)}
			}
			return llmtest.Turn{Text: `{"answer": "yes", "sure": true}`, Usage: llmUsage(10, 5)}
		}
		return llmtest.Turn{Text: fmt.Sprintf("you said %d bytes: %.40s", len(last), last),
			Usage: llmUsage(10, 5)}
	})
	env.env = append([]string{}, "SKEIN_LLM_PROVIDER=openai", "SKEIN_LLM_BASE_URL="+env.llm.BaseURL(),
		"SKEIN_LLM_MODEL=scenario-model", "SKEIN_LLM_API_KEY=fake-key", "SKEIN_SECRET_API_TOKEN=tok-5ecret-value",
		"SKEIN_SECRET_WORD=success")
	return env
}

// fakeService is the HTTP service scenarios call.
//
//	/echo            {method, query, body} of the request
//	/status/N        answers status N with {"status": N}
//	/flaky/KEY/N     503 for the first N calls with KEY, then 200 {"calls": N+1}
//	/big/N           a JSON body {"text": "xxx…"} of N bytes of text
type fakeService struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newFakeService(t *testing.T) *fakeService {
	f := &fakeService{calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var parsed any
		if json.Unmarshal(body, &parsed) != nil {
			parsed = string(body)
		}
		writeJSONBody(w, http.StatusOK, map[string]any{"method": r.Method, "query": r.URL.Query(), "body": parsed})
	})
	mux.HandleFunc("/status/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		writeJSONBody(w, n, map[string]any{"status": n})
	})
	mux.HandleFunc("/flaky/{key}/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		f.mu.Lock()
		f.calls[r.PathValue("key")]++
		c := f.calls[r.PathValue("key")]
		f.mu.Unlock()
		if c <= n {
			writeJSONBody(w, http.StatusServiceUnavailable, map[string]any{"error": "try again"})
			return
		}
		writeJSONBody(w, http.StatusOK, map[string]any{"calls": c})
	})
	mux.HandleFunc("/big/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		writeJSONBody(w, http.StatusOK, map[string]any{"text": strings.Repeat("x", n)})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// localTarget runs scenarios with `skein run` on SQLite; a signal or a
// cancel is `skein signal` or `skein cancel` from another process.
type localTarget struct {
	dir string
	env *scenarioEnv

	mu   sync.Mutex
	runs map[string]*exec.Cmd // the skein run process of each run
}

func newLocalTarget(t *testing.T, env *scenarioEnv) target {
	return &localTarget{dir: t.TempDir(), env: env, runs: map[string]*exec.Cmd{}}
}

func (l *localTarget) command(args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), l.env.env...)
	return cmd
}

func (l *localTarget) start(t *testing.T, sc *scenario, inputs map[string]any) string {
	t.Helper()
	require.Nil(t, sc.hook, "a webhook scenario runs on the served configurations only")
	in := filepath.Join(t.TempDir(), "inputs.json")
	require.NoError(t, os.WriteFile(in, []byte(mustJSON(t, inputs)), 0o644))
	cmd := l.command("run", "--dir", l.dir, "--input-file", in, filepath.Join(scenarioDir, sc.name+".yaml"))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	out := &syncBuffer{}
	id := make(chan string, 1)
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		sent := false
		for {
			n, err := stdout.Read(buf)
			out.Write(buf[:n])
			if !sent {
				for _, line := range strings.Split(out.String(), "\n") {
					if f := strings.Fields(line); len(f) >= 3 && f[0] == "▶" {
						id <- f[len(f)-3]
						sent = true
						break
					}
				}
			}
			if err != nil {
				_ = cmd.Wait()
				if !sent {
					close(id)
				}
				return
			}
		}
	}()
	runID, ok := <-id
	require.True(t, ok, "skein run printed no run id: %s %s", out.String(), stderr.String())
	l.mu.Lock()
	l.runs[runID] = cmd
	l.mu.Unlock()
	return runID
}

func (l *localTarget) kill(t *testing.T, id string) {
	l.mu.Lock()
	cmd := l.runs[id]
	l.mu.Unlock()
	require.NoError(t, cmd.Process.Kill())
	eventually(t, 30*time.Second, func() bool { return cmd.ProcessState != nil || !skeinproc.Alive(cmd.Process.Pid) }, "skein run did not die")
}

// recover resumes the run in a process of its own.
func (l *localTarget) recover(t *testing.T, id string) {
	l.background(t, "resume", "--dir", l.dir, id)
}

// background runs skein with args until it ends or the test does.
func (l *localTarget) background(t *testing.T, args ...string) {
	cmd := l.command(args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
}

func (l *localTarget) show(t *testing.T, id string) map[string]any {
	t.Helper()
	cmd := l.command("runs", "show", "--dir", l.dir, "-o", "json", id)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), errb.String())
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	return doc
}

func (l *localTarget) events(t *testing.T, id string) []map[string]any {
	t.Helper()
	cmd := l.command("runs", "events", "--dir", l.dir, id)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), errb.String())
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		evs = append(evs, ev)
	}
	return evs
}

func (l *localTarget) cancel(t *testing.T, id string, letFinish bool) {
	t.Helper()
	args := []string{"cancel", "--dir", l.dir, "--wait=false", id}
	if letFinish {
		args = append(args, "--let-finish")
	}
	out, err := l.command(args...).CombinedOutput()
	require.NoError(t, err, string(out))
}

func (l *localTarget) signal(t *testing.T, id, node string, data any) {
	t.Helper()
	// skein signal goes on with the run in its own process until it ends
	// or waits again.
	l.background(t, "signal", "--dir", l.dir, "--data", mustJSON(t, data), id, node)
}

// servedTarget runs scenarios through `skein serve`'s API: on SQLite with
// the server's default flags, or (db set) queued on Postgres for two
// workers.
type servedTarget struct {
	t    *testing.T // the test the processes belong to
	env  *scenarioEnv
	data string // --dir
	args []string
	db   string
	// queues has an entry per worker: the queues it serves.
	queues []string

	mu     sync.Mutex
	base   string
	server *exec.Cmd
	worked []*exec.Cmd
}

func newServedTarget(t *testing.T, env *scenarioEnv, db string, queues []string) target {
	data := t.TempDir()
	s := &servedTarget{t: t, env: env, data: data, args: []string{"--dir", data, "--workflows", scenarioDir}, db: db, queues: queues}
	if db != "" {
		mig := run(t, "migrate", "--db", db)
		require.Equal(t, 0, mig.code, mig.stderr)
		s.args = append(s.args, "--db", db, "--queue")
		for _, q := range queues {
			s.worked = append(s.worked, s.startWorker(q))
		}
	}
	s.base, s.server = serveWithEnv(t, env.env, s.args...)
	return s
}

// queueDefault is the queue of nodes that name none.
const queueDefault = "default"

// startWorker starts a worker of queues; it goes silent for at most 3 s
// before its nodes count as lost (the kill scenarios).
func (s *servedTarget) startWorker(queues string) *exec.Cmd {
	cmd, _ := workerWithEnv(s.t, s.db, s.env.env, "--queues", queues, "--concurrency", "8", "--rescue-after", "3s")
	return cmd
}

// kill kills the process that runs the run's nodes: on the queue every
// worker of the default queue, or only the first worker of a scenario
// that names its workers' queues; else the server.
func (s *servedTarget) kill(t *testing.T, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == "" {
		require.NoError(t, s.server.Process.Kill())
		return
	}
	for i, p := range s.worked {
		if s.queues[i] == queueDefault || i == 0 {
			require.NoError(t, p.Process.Kill())
			s.worked[i] = nil
		}
	}
}

// recover starts the killed workers again, or a new server on the same
// folder: its takeover goes on with the run once the dead server's lease
// ran out.
func (s *servedTarget) recover(t *testing.T, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == "" {
		s.base, s.server = serveWithEnv(s.t, s.env.env, s.args...)
		return
	}
	for i, p := range s.worked {
		if p == nil {
			s.worked[i] = s.startWorker(s.queues[i])
		}
	}
}

func (s *servedTarget) url(path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base + path
}

// workerWithEnv is worker with env for its process.
func workerWithEnv(t *testing.T, db string, env []string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"worker", "--db", db, "--dir", t.TempDir()}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return cmd, out
}

func (s *servedTarget) post(t *testing.T, path, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(s.url(path), "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var doc map[string]any
	_ = json.Unmarshal(raw, &doc)
	return resp.StatusCode, doc
}

func (s *servedTarget) start(t *testing.T, sc *scenario, inputs map[string]any) string {
	t.Helper()
	if sc.hook != nil {
		code, doc := s.post(t, "/hooks/"+sc.name+"/"+sc.hook.trigger, sc.hook.body)
		require.Equal(t, http.StatusAccepted, code, mustJSON(t, doc))
		id := str(doc["execution_id"])
		require.NotEmpty(t, id, mustJSON(t, doc))
		return id
	}
	code, doc := s.post(t, "/api/workflows/"+sc.name+"/runs", mustJSON(t, map[string]any{"inputs": inputs}))
	require.Equal(t, http.StatusAccepted, code, mustJSON(t, doc))
	return str(doc["execution_id"])
}

func (s *servedTarget) show(t *testing.T, id string) map[string]any {
	t.Helper()
	resp, err := http.Get(s.url("/api/runs/" + id))
	require.NoError(t, err)
	defer resp.Body.Close()
	var doc map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	require.Equal(t, http.StatusOK, resp.StatusCode, mustJSON(t, doc))
	if dir, _ := doc["dir"].(string); dir != "" {
		// An answer names the run folder within the data folder.
		require.False(t, filepath.IsAbs(dir), "an answer names no path of the server's: %s", dir)
		doc["dir"] = filepath.Join(s.data, dir)
	}
	return doc
}

// events reads an ended run's event stream to its end.
func (s *servedTarget) events(t *testing.T, id string) []map[string]any {
	t.Helper()
	resp, err := http.Get(s.url("/api/runs/" + id + "/events"))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var evs []map[string]any
	for _, line := range strings.Split(string(raw), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(data), &ev), data)
		evs = append(evs, ev)
	}
	return evs
}

func (s *servedTarget) cancel(t *testing.T, id string, letFinish bool) {
	t.Helper()
	body := `{}`
	if letFinish {
		body = `{"let_finish": true}`
	}
	code, doc := s.post(t, "/api/runs/"+id+"/cancel", body)
	require.Less(t, code, 300, mustJSON(t, doc))
}

func (s *servedTarget) signal(t *testing.T, id, node string, data any) {
	t.Helper()
	code, doc := s.post(t, "/api/runs/"+id+"/signals/"+node, mustJSON(t, data))
	require.Less(t, code, 300, mustJSON(t, doc))
}
