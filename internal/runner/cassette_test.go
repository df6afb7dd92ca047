package runner_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/workflow"
)

// taped records itself (record: true): a command that leaves a marker and
// prints a random number, then one that is given the run's secret.
const taped = `version: 1
name: taped
record: true
secrets: [TOKEN]
inputs:
  marker: {type: string}
nodes:
  - id: roll
    type: shell
    command: [sh, -c, 'touch "$0"; od -An -N4 -tu4 /dev/urandom', "{{ inputs.marker }}"]
  - id: use
    type: shell
    command: [sh, -c, 'echo "rolled $1 with a token of ${#0} characters"', "{{ secrets.TOKEN }}", "{{ trim(roll.stdout) }}"]
  - id: say
    type: template
    text: "said {{ trim(use.stdout) }}"
  - id: ref
    type: template
    text: "run {{ execution.id }}"
edges:
  - {from: roll, to: use}
  - {from: use, to: say}
  - {from: roll, to: ref}
outputs:
  text: "{{ trim(use.stdout) }}"
`

// TestRecordTrueAndReplayRunNothing: a workflow with record: true keeps a
// cassette without the run's secret; a replay runs no command (the marker
// is not made again), needs no secret, and gives the recorded outputs.
func TestRecordTrueAndReplayRunNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const token = "tok-0123456789-secret"
	env := map[string]string{"SKEIN_SECRET_TOKEN": token}
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	file := filepath.Join(dir, "taped.yaml")
	require.NoError(t, os.WriteFile(file, []byte(taped), 0o644))
	w, err := r.Load(file)
	require.NoError(t, err)
	marker := filepath.Join(dir, "ran")
	res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w, Inputs: map[string]any{"marker": marker}})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	require.Equal(t, "completed", string(res.Run.Status))
	text := res.Engine.Outputs["text"].(string)
	require.Contains(t, text, "with a token of 21 characters")
	raw, err := os.ReadFile(filepath.Join(res.Run.Dir, cassette.FileName))
	require.NoError(t, err)
	require.NotContains(t, string(raw), token)
	require.Equal(t, 2, strings.Count(string(raw), `"kind":"shell"`))

	require.NoError(t, os.Remove(marker))
	delete(env, "SKEIN_SECRET_TOKEN") // a replay sends nothing: it needs no secret
	rr, err := r.Replay(t.Context(), runner.ReplayRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.NoError(t, rr.Err)
	require.Equal(t, "completed", string(rr.Run.Status))
	require.Equal(t, text, rr.Engine.Outputs["text"], "the recorded random number, not a new one")
	require.NoFileExists(t, marker, "no command ran")
	require.Empty(t, rr.Diverged, "an output naming its run (ref) is the same output")
	require.Empty(t, rr.Mismatches)
	require.Equal(t, res.Run.ID, rr.Of)
	require.Equal(t, "cli", res.Run.Source, "a run started with no source is the command line's")
	require.Equal(t, "replay", rr.Run.Source)
	require.Equal(t, res.Run.ID, rr.Run.ReplayOf)
	doc, err := r.Get(t.Context(), rr.Run.ID)
	require.NoError(t, err)
	require.Equal(t, "replay", doc.Source, "the run document says it is a replay")
	require.Equal(t, res.Run.ID, doc.ReplayOf)
}

// TestReplayEditedWorkflow: a replay of an edited workflow names the steps
// whose output differs from the recorded run's; with AllowNew a changed
// command runs live and its exchange is appended to the run's cassette.
func TestReplayEditedWorkflow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"SKEIN_SECRET_TOKEN": "tok-0123456789-secret"}
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	file := filepath.Join(dir, "taped.yaml")
	require.NoError(t, os.WriteFile(file, []byte(taped), 0o644))
	w, err := r.Load(file)
	require.NoError(t, err)
	marker := filepath.Join(dir, "ran")
	res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w, Inputs: map[string]any{"marker": marker}})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status))
	require.NoError(t, os.Remove(marker))

	edited := filepath.Join(dir, "edited.yaml")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(taped, "said {{", "told {{", 1)), 0o644))
	rr, err := r.Replay(t.Context(), runner.ReplayRequest{RunID: res.Run.ID, WorkflowFile: edited})
	require.NoError(t, err)
	require.Equal(t, "completed", string(rr.Run.Status))
	require.Len(t, rr.Diverged, 1)
	d := rr.Diverged[0]
	require.Equal(t, "say", d.Node)
	require.Equal(t, "output", d.What)
	require.Contains(t, d.Replayed.(map[string]any)["text"], "told rolled")
	require.NoFileExists(t, marker)

	// A changed command: without AllowNew it fails its node, with it it
	// runs and is appended.
	changed := strings.Replace(taped, "-N4", "-N2", 1)
	require.NoError(t, os.WriteFile(edited, []byte(changed), 0o644))
	rr, err = r.Replay(t.Context(), runner.ReplayRequest{RunID: res.Run.ID, WorkflowFile: edited})
	require.NoError(t, err)
	require.Equal(t, "failed", string(rr.Run.Status))
	require.Len(t, rr.Mismatches, 1)
	require.Equal(t, "roll", rr.Mismatches[0].Node)
	require.NoFileExists(t, marker)

	rr, err = r.Replay(t.Context(), runner.ReplayRequest{RunID: res.Run.ID, WorkflowFile: edited, AllowNew: true})
	require.NoError(t, err)
	require.Equal(t, "completed", string(rr.Run.Status))
	require.Equal(t, 2, rr.Added, "roll, and use, given roll's new number")
	require.FileExists(t, marker, "sent live")
	raw, err := os.ReadFile(filepath.Join(res.Run.Dir, cassette.FileName))
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(raw), `"new":true`), "appended to the recorded run's cassette")
	var divergedNodes []string
	for _, d := range rr.Diverged {
		divergedNodes = append(divergedNodes, d.Node)
	}
	require.Contains(t, divergedNodes, "roll", "a new random number")
}

// TestChildRunsAreTaped: a subworkflow's nodes are recorded apart from the
// parent's, even under the same id, and replayed.
func TestChildRunsAreTaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "child.yaml"), []byte(`version: 1
name: child
inputs:
  marker: {type: string}
nodes:
  - {id: roll, type: shell, command: [sh, -c, 'touch "$0.child"; od -An -N4 -tu4 /dev/urandom', "{{ inputs.marker }}"]}
outputs:
  n: "{{ trim(roll.stdout) }}"
`), 0o644))
	file := filepath.Join(dir, "parent.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: parent
record: true
inputs:
  marker: {type: string}
nodes:
  - {id: roll, type: shell, command: [sh, -c, 'touch "$0"; od -An -N4 -tu4 /dev/urandom', "{{ inputs.marker }}"]}
  - {id: sub, type: subworkflow, workflow: child.yaml, inputs: {marker: "{{ inputs.marker }}"}}
edges:
  - {from: roll, to: sub}
outputs:
  text: "{{ trim(roll.stdout) }} {{ sub.n }}"
`), 0o644))
	w, err := r.Load(file)
	require.NoError(t, err)
	marker := filepath.Join(dir, "ran")
	res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w, Inputs: map[string]any{"marker": marker}})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status))
	raw, err := os.ReadFile(filepath.Join(res.Run.Dir, cassette.FileName))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"node":"roll"`)
	require.Contains(t, string(raw), `"node":"child/roll"`)
	require.NoError(t, os.Remove(marker))
	require.NoError(t, os.Remove(marker+".child"))

	rr, err := r.Replay(t.Context(), runner.ReplayRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "completed", string(rr.Run.Status), "%+v", rr.Mismatches)
	require.Equal(t, res.Engine.Outputs["text"], rr.Engine.Outputs["text"])
	require.NoFileExists(t, marker)
	require.NoFileExists(t, marker+".child")
}

// TestJudgeCallsAreTaped: the judge's model calls that grade a recorded
// run's checks are in its cassette, and a replay's verdict comes from it
// with the model gone.
func TestJudgeCallsAreTaped(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.Reply(`{"verdicts": [{"check_name": "expect", "verdict": "pass", "reasoning": "it greets Ada"}]}`),
	})
	dir := t.TempDir()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	file := filepath.Join(dir, "judged.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`version: 1
name: judged
record: true
llm:
  judge: {provider: openai, model: gpt-4.1-mini, base_url: "`+srv.BaseURL()+`", api_key: test}
nodes:
  - id: page
    type: set
    values: {title: "Welcome, Ada"}
    expect: "a greeting that names the user"
`), 0o644))
	w, err := r.Load(file)
	require.NoError(t, err)
	res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	require.Equal(t, "PASSED", res.Verdict.Status)
	require.Equal(t, 1, srv.Calls())
	srv.Close()

	rr, err := r.Replay(t.Context(), runner.ReplayRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.NoError(t, rr.Err)
	require.Equal(t, "PASSED", rr.Verdict.Status, "%+v", rr.Verdict)
	require.Equal(t, 1, srv.Calls())
	require.Empty(t, rr.Mismatches)
}

// TestRecordedRunsAreNotQueued: a run that records (record: true) is not
// sent to the queue's workers, where no cassette would see its nodes.
func TestRecordedRunsAreNotQueued(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "taped.yaml", taped))
	require.NoError(t, err)
	_, err = b.r.Enqueue(b.ctx, runner.StartRequest{Workflow: w, Inputs: map[string]any{"marker": "x"}})
	var ue *runner.UsageError
	require.ErrorAs(t, err, &ue)
	require.ErrorContains(t, err, "run it with --local")
}

// TestClockIsTaped: the times a node reads are recorded and given again:
// a wait until a time, recorded a second before it, waits that second in
// the replay too, though that time has passed — the same output, no step
// diverged. The runner's clock is the test's, so the second is exact
// however loaded the machine is.
func TestClockIsTaped(t *testing.T) {
	t.Parallel()
	r, clk, dir := openOnClock(t)
	w := loadIn(t, r, dir, "waits.yaml", `version: 1
name: waits
record: true
inputs:
  until: {type: string}
nodes:
  - {id: hold, type: wait, until: "{{ inputs.until }}"}
`)
	until := clk.Now().Add(time.Second).Format(time.RFC3339Nano)
	res := recordOnClock(t, clk, r, runner.StartRequest{Workflow: w, Inputs: map[string]any{"until": until}}, time.Second)
	require.Equal(t, "completed", string(res.Run.Status))
	waited := res.Engine.Steps[len(res.Engine.Steps)-1].Output["waited_ms"]
	require.EqualValues(t, 1000, waited)
	raw, err := os.ReadFile(filepath.Join(res.Run.Dir, cassette.FileName))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"kind":"clock","node":"hold"`)

	clk.Advance(time.Minute) // the recorded time is long gone
	rr := replayOnClock(t, clk, r, res.Run.ID)
	require.Equal(t, "completed", string(rr.Run.Status))
	require.Equal(t, waited, rr.Engine.Steps[len(rr.Engine.Steps)-1].Output["waited_ms"], "the recorded clock")
	require.Empty(t, rr.Diverged)
}

// TestNowIsTaped: an expression's now() reads the run's clock — the
// test's here — and a replay reads the times the recorded steps read, an
// hour later: the same outputs, no step diverged.
func TestNowIsTaped(t *testing.T) {
	t.Parallel()
	r, clk, dir := openOnClock(t)
	w := loadIn(t, r, dir, "stamp.yaml", `version: 1
name: stamp
record: true
nodes:
  - {id: stamp, type: template, text: "{{ now().Unix() }}"}
  - {id: fresh, type: if, condition: "now().Unix() == int(stamp.text)"}
  - {id: later, type: template, text: "{{ now().Format('15:04:05') }}"}
edges:
  - {from: stamp, to: fresh}
  - {from: fresh, to: later, on: "true"}
outputs:
  at: "{{ stamp.text }} {{ later.text }}"
  ended: "{{ now().Unix() }}"
`)
	clk.Advance(1000 * time.Hour) // far from the machine's clock
	at := clk.Now()
	res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	require.Equal(t, "completed", string(res.Run.Status))
	want := fmt.Sprintf("%d %s", at.Unix(), at.Format("15:04:05"))
	require.Equal(t, want, res.Engine.Outputs["at"], "the run's clock, not the machine's")
	require.EqualValues(t, at.Unix(), res.Engine.Outputs["ended"])

	clk.Advance(time.Hour)
	rr := replayOnClock(t, clk, r, res.Run.ID)
	require.Equal(t, want, rr.Engine.Outputs["at"], "the recorded times")
	require.Empty(t, rr.Diverged)
}

// openOnClock opens a runner in a temporary folder on a fake clock.
func openOnClock(t *testing.T) (*runner.Runner, *clock.Fake, string) {
	t.Helper()
	dir := t.TempDir()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r, clk, dir
}

// loadIn writes src to name in dir and loads it.
func loadIn(t *testing.T, r *runner.Runner, dir, name, src string) *workflow.Workflow {
	t.Helper()
	flow := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(flow, []byte(src), 0o644))
	w, err := r.Load(flow)
	require.NoError(t, err)
	return w
}

// recordOnClock starts a run that waits for a timer, moves the clock by
// d once the timer is set, and returns the ended run.
func recordOnClock(t *testing.T, clk *clock.Fake, r *runner.Runner, req runner.StartRequest, d time.Duration) *runner.Result {
	t.Helper()
	type result struct {
		res *runner.Result
		err error
	}
	recorded := make(chan result, 1)
	timer := clk.WaitForTimer()
	go func() {
		res, err := r.Start(t.Context(), req)
		recorded <- result{res, err}
	}()
	select {
	case <-timer:
	case got := <-recorded:
		t.Fatalf("the recorded run ended without waiting: %+v", got)
	}
	clk.Advance(d)
	got := <-recorded
	require.NoError(t, got.err)
	require.NoError(t, got.res.Err)
	return got.res
}

// replayOnClock replays a run while nobody moves the clock past now: a
// timer due later is a wait again, which fails the test; one due now (a
// recorded wait, over) is let fire.
func replayOnClock(t *testing.T, clk *clock.Fake, r *runner.Runner, runID string) *runner.ReplayResult {
	t.Helper()
	type replay struct {
		res *runner.ReplayResult
		err error
	}
	replayed := make(chan replay, 1)
	go func() {
		rr, err := r.Replay(t.Context(), runner.ReplayRequest{RunID: runID})
		replayed <- replay{rr, err}
	}()
	var rr replay
	for done := false; !done; {
		timer := clk.WaitForTimer()
		if next, ok := clk.Next(); ok {
			if next.After(clk.Now()) {
				clk.Advance(time.Hour) // let the replay end before failing
				<-replayed
				t.Fatalf("the replay waits again, until %s", next)
			}
			clk.Advance(0)
			continue
		}
		select {
		case <-timer:
		case rr = <-replayed:
			done = true
		}
	}
	require.NoError(t, rr.err)
	require.NoError(t, rr.res.Err)
	return rr.res
}

// TestReplayDoesNotWaitAgain: a replay does not wait again for what the
// recorded run waited for (a wait node, a retry's backoff). The runner's
// clock is the test's: the recorded run waits until the test moves the
// clock past its hour; the replay, on the same clock that nobody moves
// past now, completes.
func TestReplayDoesNotWaitAgain(t *testing.T) {
	t.Parallel()
	r, clk, dir := openOnClock(t)
	w := loadIn(t, r, dir, "pause.yaml", `version: 1
name: pause
record: true
nodes:
  - {id: nap, type: wait, duration: 1h}
  - {id: after, type: shell, command: [echo, awake]}
edges:
  - {from: nap, to: after}
outputs:
  said: "{{ trim(after.stdout) }}"
`)
	res := recordOnClock(t, clk, r, runner.StartRequest{Workflow: w}, time.Hour)
	require.Equal(t, "completed", string(res.Run.Status))

	rr := replayOnClock(t, clk, r, res.Run.ID)
	require.Equal(t, "awake", rr.Engine.Outputs["said"])
	require.Empty(t, rr.Diverged)
	require.Zero(t, clk.Pending(), "no timer is left behind")
}

// TestReplayOfARunWithMemory: what a step recalled from memory is in the
// cassette; a replay — after the thread moved on — sends the recorded
// requests, and remembers nothing.
func TestReplayOfARunWithMemory(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.Reply("Hello Ada."),
		llmtest.Reply("You are Ada."),
		llmtest.Reply("Still here."),
		llmtest.Reply("Yes."),
	})
	dir := t.TempDir()
	file := filepath.Join(dir, "remembers.yaml")
	src := strings.NewReplacer("PROVIDER", "openai", "MODEL", "gpt-4.1-mini", "BASE", srv.BaseURL(),
		"name: remembers\n", "name: remembers\nrecord: true\n", "max_messages: 2", "max_messages: 20").Replace(memoryFlow)
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	env := func(k string) (string, bool) { return map[string]string{"KEY": "k-1"}[k], k == "KEY" }
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: env})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	w, err := r.Load(file)
	require.NoError(t, err)
	say := func(message string) *runner.Result {
		t.Helper()
		res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w, Inputs: map[string]any{"conversation": "c1", "message": message}})
		require.NoError(t, err)
		require.NoError(t, res.Err)
		require.Equal(t, "completed", string(res.Run.Status))
		return res
	}
	say("I am Ada.")
	second := say("Who am I?") // recalls the first exchange
	say("Still there?")        // the thread moves on
	calls := srv.Calls()

	rr, err := r.Replay(t.Context(), runner.ReplayRequest{RunID: second.Run.ID})
	require.NoError(t, err)
	require.NoError(t, rr.Err)
	require.Empty(t, rr.Mismatches, "the replay recalls what the recorded run recalled")
	require.Equal(t, "completed", string(rr.Run.Status))
	require.Equal(t, "You are Ada.", rr.Engine.Outputs["reply"])
	require.Equal(t, calls, srv.Calls(), "nothing is sent")

	say("And now?")
	req := string(srv.Last().Raw)
	require.Contains(t, req, "I am Ada.")
	require.Equal(t, 1, strings.Count(req, "Who am I?"), "the replay added no turn to the thread: %s", req)
}

// TestReplayReadsItsRunAsTheRecorded: a step that outputs its run's id and
// start time does not diverge in a replay, which is another run, started
// later: both are read as the recorded run's.
func TestReplayReadsItsRunAsTheRecorded(t *testing.T) {
	t.Parallel()
	r, clk, dir := openOnClock(t)
	w := loadIn(t, r, dir, "when.yaml", `version: 1
name: when
record: true
nodes:
  - {id: a, type: set, values: {at: "{{ execution.started_at }}", id: "{{ execution.id }}"}}
`)
	res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	clk.Advance(time.Hour)
	rr, err := r.Replay(t.Context(), runner.ReplayRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "completed", string(rr.Run.Status))
	require.NotEqual(t, res.Engine.Outputs["a"], rr.Engine.Outputs["a"], "the replay is another run, an hour later")
	require.Empty(t, rr.Diverged)
}
