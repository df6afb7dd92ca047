package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/clock"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// approvalFlow drafts, waits for an approval (an hour at most), then
// sends what it drafted with the approver's name.
const approvalFlow = `version: 1
name: approval
nodes:
  - {id: draft, type: template, text: "hello"}
  - {id: approve, type: wait, until: signal, timeout: 1h}
  - {id: send, type: template, text: "{{ draft.text }}, approved by {{ approve.data.by }}"}
  - {id: expired, type: template, text: "nobody approved"}
edges:
  - {from: draft, to: approve}
  - {from: approve, to: send}
  - {from: approve, to: expired, on: timeout}
outputs:
  message: "{{ send.text ?? expired.text }}"
  approval: "{{ approve.data }}"
`

var park = &runner.Park{After: time.Minute}

type signalBundle struct {
	ctx context.Context
	r   *runner.Runner
	dir string
	clk *clock.Fake
}

// setupSignals opens a runner on a fake clock; poll is its CancelPoll.
func setupSignals(t *testing.T, poll time.Duration) *signalBundle {
	t.Helper()
	dir := t.TempDir()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), Clock: clk, CancelPoll: poll})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return &signalBundle{ctx: t.Context(), r: r, dir: dir, clk: clk}
}

func (b *signalBundle) start(t *testing.T, src string, o runner.Options) *runner.Result {
	t.Helper()
	p := filepath.Join(b.dir, "flow.yaml")
	require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	w, err := b.r.Load(p)
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, Options: o})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	return res
}

func stepOf(doc *runner.RunDoc, node string) *runner.StepDoc {
	for i := range doc.Steps {
		if doc.Steps[i].Node == node {
			return &doc.Steps[i]
		}
	}
	return nil
}

// TestSignalResumesAWaitingRun: the run parks when it waits for the
// approval, holding nothing; the signal is recorded and the run resumed,
// and it completes with the signal's data, without running draft again.
func TestSignalResumesAWaitingRun(t *testing.T) {
	t.Parallel()
	b := setupSignals(t, 0)
	res := b.start(t, approvalFlow, runner.Options{Park: park})
	require.Equal(t, "waiting", string(res.Run.Status))
	id := res.Run.ID

	doc, err := b.r.Get(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, "waiting", string(doc.Status))
	require.Nil(t, doc.Owner, "no process holds a waiting run")
	drafted := *stepOf(doc, "draft").FinishedAt
	wake := b.clk.Now().Add(time.Hour)
	require.Equal(t, &wake, doc.WakeAt)
	approve := stepOf(doc, "approve")
	require.Equal(t, "waiting", string(approve.Status))
	require.Equal(t, &wake, approve.WakeAt)
	list, err := b.r.List(b.ctx, runner.ListRequest{Status: "waiting"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	list, err = b.r.List(b.ctx, runner.ListRequest{Status: string(runner.StatusInterrupted)})
	require.NoError(t, err)
	require.Empty(t, list, "a waiting run is not interrupted")
	due, err := b.r.Due(b.ctx)
	require.NoError(t, err)
	require.Empty(t, due, "its timeout is an hour away")

	b.clk.Advance(10 * time.Minute)
	sig, err := b.r.Signal(b.ctx, runner.SignalRequest{RunID: id, Node: "approve", Data: map[string]any{"by": "Ada"}})
	require.NoError(t, err)
	require.Equal(t, id, sig.Resume, "nobody runs it: the caller resumes it")
	require.Equal(t, 1, sig.Signal.Visit)
	require.Equal(t, "waiting", string(sig.Run.Status))

	done, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: id})
	require.NoError(t, err)
	require.NoError(t, done.Err)
	require.Equal(t, "completed", string(done.Run.Status))
	require.Equal(t, "hello, approved by Ada", done.Run.Outputs["message"])
	require.Equal(t, map[string]any{"by": "Ada"}, done.Run.Outputs["approval"])
	doc, err = b.r.Get(b.ctx, id)
	require.NoError(t, err)
	draft := stepOf(doc, "draft")
	require.Equal(t, "success", string(draft.Status))
	require.False(t, draft.Cached, "the run went on after its signal: its steps are its own, not cached")
	require.Equal(t, drafted, *draft.FinishedAt, "draft is not run again: its step is as it was")
	approve = stepOf(doc, "approve")
	require.Equal(t, "success", string(approve.Status))
	require.Equal(t, b.clk.Now().Format(time.RFC3339Nano), approve.Output["signaled_at"])
	require.Equal(t, "skipped", string(stepOf(doc, "expired").Status))

	_, err = b.r.Signal(b.ctx, runner.SignalRequest{RunID: id, Node: "approve"})
	require.ErrorIs(t, err, runner.ErrCompleted)
}

func TestSignalErrors(t *testing.T) {
	t.Parallel()
	b := setupSignals(t, 0)
	res := b.start(t, approvalFlow, runner.Options{Park: park})
	id := res.Run.ID
	for _, tc := range []struct {
		name, run, node string
		want            error
	}{
		{"unknown run", "nope", "approve", runner.ErrNotFound},
		{"unknown node", id, "nope", runner.ErrNoNode},
		{"not a wait", id, "draft", runner.ErrNotWaiting},
		{"not started", id, "send", runner.ErrNotWaiting},
	} {
		_, err := b.r.Signal(b.ctx, runner.SignalRequest{RunID: tc.run, Node: tc.node})
		require.ErrorIs(t, err, tc.want, tc.name)
	}
	_, err := b.r.Signal(b.ctx, runner.SignalRequest{RunID: id, Node: "approve", Data: "first"})
	require.NoError(t, err)
	_, err = b.r.Signal(b.ctx, runner.SignalRequest{RunID: id, Node: "approve", Data: "second"})
	require.ErrorIs(t, err, runner.ErrNotWaiting, "the waiting step has its signal already")
	require.ErrorContains(t, err, "has its signal already")

	// Its timeout passed: a signal now would be too late.
	other := b.start(t, approvalFlow, runner.Options{Park: park})
	b.clk.Advance(2 * time.Hour)
	_, err = b.r.Signal(b.ctx, runner.SignalRequest{RunID: other.Run.ID, Node: "approve"})
	require.ErrorIs(t, err, runner.ErrNotWaiting)
	require.ErrorContains(t, err, "its timeout passed")
}

// TestSignalReachesALiveOwner: a run held in its process (not parked)
// gets a signal through its lease's poll.
func TestSignalReachesALiveOwner(t *testing.T) {
	t.Parallel()
	b := setupSignals(t, 10*time.Millisecond)
	p := filepath.Join(b.dir, "flow.yaml")
	require.NoError(t, os.WriteFile(p, []byte(approvalFlow), 0o644))
	w, err := b.r.Load(p)
	require.NoError(t, err)
	done := make(chan *runner.Result, 1)
	go func() {
		res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, RunID: "live0000001"})
		if err != nil {
			t.Errorf("Start: %v", err)
		}
		done <- res
	}()
	var sig *runner.SignalResult
	require.Eventually(t, func() bool {
		sig, err = b.r.Signal(b.ctx, runner.SignalRequest{RunID: "live0000001", Node: "approve", Data: map[string]any{"by": "Bo"}})
		return err == nil
	}, 60*time.Second, 5*time.Millisecond, "approve waits")
	require.Empty(t, sig.Resume, "its owner applies it")
	// The owner may finish the run before Signal reads it back.
	require.Contains(t, []string{"running", "completed"}, string(sig.Run.Status), "the signal is taken, not left waiting")
	select {
	case res := <-done:
		require.Equal(t, "completed", string(res.Run.Status))
		require.Equal(t, "hello, approved by Bo", res.Run.Outputs["message"])
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not take its signal")
	}
}

// TestAWaitingTimerIsDueAtItsWakeUpTime: a run that waits an hour parks;
// it is due once the clock passes its wake-up time, and a resume then
// takes the timeout handle at once.
func TestAWaitingTimerIsDueAtItsWakeUpTime(t *testing.T) {
	t.Parallel()
	b := setupSignals(t, 0)
	res := b.start(t, approvalFlow, runner.Options{Park: park})
	id := res.Run.ID
	b.clk.Advance(time.Hour - time.Second)
	due, err := b.r.Due(b.ctx)
	require.NoError(t, err)
	require.Empty(t, due)
	b.clk.Advance(time.Second)
	due, err = b.r.Due(b.ctx)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, id, due[0].ID)

	done := make(chan *runner.Result, 1)
	go func() {
		res, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: id, Options: runner.Options{Park: park}})
		if err != nil {
			t.Errorf("Resume: %v", err)
		}
		done <- res
	}()
	for b.clk.Pending() == 0 {
		<-b.clk.WaitForTimer() // the timeout, due now
	}
	b.clk.Advance(0)
	select {
	case res := <-done:
		require.Equal(t, "completed", string(res.Run.Status))
		require.Equal(t, "nobody approved", res.Run.Outputs["message"])
		require.Nil(t, res.Run.Outputs["approval"])
	case <-time.After(60 * time.Second):
		t.Fatal("the resumed run did not end")
	}
	doc, err := b.r.Get(b.ctx, id)
	require.NoError(t, err)
	draft := stepOf(doc, "draft")
	require.Equal(t, "success", string(draft.Status))
	require.False(t, draft.Cached, "a run going on after its timer keeps its steps as they were, not cached")
	due, err = b.r.Due(b.ctx)
	require.NoError(t, err)
	require.Empty(t, due)
}

func TestCancelAWaitingRun(t *testing.T) {
	t.Parallel()
	b := setupSignals(t, 0)
	res := b.start(t, approvalFlow, runner.Options{Park: park})
	run, err := b.r.Cancel(b.ctx, runner.CancelRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "cancelled", string(run.Status))
	require.Equal(t, store.Owner{}, run.Owner)
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, "cancelled", string(stepOf(doc, "approve").Status))
	_, err = b.r.Signal(b.ctx, runner.SignalRequest{RunID: res.Run.ID, Node: "approve"})
	require.ErrorIs(t, err, runner.ErrNotWaiting)
	require.ErrorContains(t, err, "skein resume")
}

// signalWhileParking is a store that records a signal for approve just
// before the execution's parking record is written: the signal found the
// run owned and left it to its owner, which is about to let go.
type signalWhileParking struct {
	store.Store
	sent bool
}

func (s *signalWhileParking) SaveBatch(ctx context.Context, bs []store.Batch) error {
	for _, b := range bs {
		if b.Finish != nil && b.Finish.Status == "waiting" && !s.sent {
			s.sent = true
			if err := s.SaveSignal(ctx, &store.Signal{RunID: b.RunID, Node: "approve", Visit: 1, Data: map[string]any{"by": "Cy"}}); err != nil {
				return err
			}
		}
	}
	return s.Store.SaveBatch(ctx, bs)
}

// TestASignalSavedWhileTheRunParksIsNotLost: the execution looks for
// signals once its run is parked, and resumes it for one it finds.
func TestASignalSavedWhileTheRunParksIsNotLost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	r, err := runner.Open(runner.Config{Dir: dir, Store: &signalWhileParking{Store: st}})
	require.NoError(t, err)
	defer r.Close()
	p := filepath.Join(dir, "flow.yaml")
	require.NoError(t, os.WriteFile(p, []byte(approvalFlow), 0o644))
	w, err := r.Load(p)
	require.NoError(t, err)
	res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w, Options: runner.Options{Park: park}})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status))
	require.Equal(t, "hello, approved by Cy", res.Run.Outputs["message"])
	require.Equal(t, 2, res.Run.Generation, "parked once, resumed at once")
}

// TestAChildRunTakesSignals: a subworkflow's child run waits in its
// parent's process, which polls the child's signals.
func TestAChildRunTakesSignals(t *testing.T) {
	t.Parallel()
	b := setupSignals(t, 10*time.Millisecond)
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "child.yaml"), []byte(approvalFlow), 0o644))
	parent := filepath.Join(b.dir, "parent.yaml")
	require.NoError(t, os.WriteFile(parent, []byte(`version: 1
name: parent
nodes:
  - {id: sub, type: subworkflow, workflow: child.yaml}
outputs:
  message: "{{ sub.message }}"
`), 0o644))
	w, err := b.r.Load(parent)
	require.NoError(t, err)
	done := make(chan *runner.Result, 1)
	go func() {
		res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, RunID: "parent00001", Options: runner.Options{Park: park}})
		if err != nil {
			t.Errorf("Start: %v", err)
		}
		done <- res
	}()
	require.Eventually(t, func() bool {
		_, err = b.r.Signal(b.ctx, runner.SignalRequest{RunID: "parent00001.sub1", Node: "approve", Data: map[string]any{"by": "Di"}})
		return err == nil
	}, 60*time.Second, 5*time.Millisecond, "the child's approve waits")
	select {
	case res := <-done:
		require.Equal(t, "completed", string(res.Run.Status))
		require.Equal(t, "hello, approved by Di", res.Run.Outputs["message"])
	case <-time.After(60 * time.Second):
		t.Fatal("the child did not take its signal")
	}
}

// TestRerunPinningAnApprovalDoesNotWaitAgain: a rerun that pins a wait
// node whose step got its signal takes the signal's data from that step
// and goes on; it does not wait for a signal again.
func TestRerunPinningAnApprovalDoesNotWaitAgain(t *testing.T) {
	t.Parallel()
	b := setupSignals(t, 0)
	res := b.start(t, approvalFlow, runner.Options{Park: park})
	id := res.Run.ID
	_, err := b.r.Signal(b.ctx, runner.SignalRequest{RunID: id, Node: "approve", Data: map[string]any{"by": "Ada"}})
	require.NoError(t, err)
	done, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: id})
	require.NoError(t, err)
	require.Equal(t, "completed", string(done.Run.Status))

	again, err := b.r.Rerun(b.ctx, runner.RerunRequest{RunID: id, Pins: []string{"approve"}, Options: runner.Options{Park: park}})
	require.NoError(t, err)
	require.NoError(t, again.Err)
	require.Equal(t, "completed", string(again.Run.Status), "the pinned approval did not wait again")
	require.Equal(t, "hello, approved by Ada", again.Run.Outputs["message"])
	doc, err := b.r.Get(b.ctx, again.Run.ID)
	require.NoError(t, err)
	require.True(t, stepOf(doc, "approve").Pinned)
}

// TestPinsSurviveTheResumeOfAParkedRerun: a re-run with draft pinned
// parks at the approval; the signal resumes it, and draft's step is still
// the pinned one — not a cached step, and not run again.
func TestPinsSurviveTheResumeOfAParkedRerun(t *testing.T) {
	t.Parallel()
	b := setupSignals(t, 0)
	first := b.start(t, approvalFlow, runner.Options{Park: park})
	_, err := b.r.Signal(b.ctx, runner.SignalRequest{RunID: first.Run.ID, Node: "approve", Data: map[string]any{"by": "Ada"}})
	require.NoError(t, err)
	done, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: first.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "completed", string(done.Run.Status))

	again, err := b.r.Rerun(b.ctx, runner.RerunRequest{RunID: first.Run.ID, Pins: []string{"draft"}, Options: runner.Options{Park: park}})
	require.NoError(t, err)
	require.NoError(t, again.Err)
	require.Equal(t, "waiting", string(again.Run.Status))
	doc, err := b.r.Get(b.ctx, again.Run.ID)
	require.NoError(t, err)
	require.True(t, stepOf(doc, "draft").Pinned, "draft is pinned in the re-run")

	_, err = b.r.Signal(b.ctx, runner.SignalRequest{RunID: again.Run.ID, Node: "approve", Data: map[string]any{"by": "Grace"}})
	require.NoError(t, err)
	done, err = b.r.Resume(b.ctx, runner.ResumeRequest{RunID: again.Run.ID})
	require.NoError(t, err)
	require.NoError(t, done.Err)
	require.Equal(t, "hello, approved by Grace", done.Run.Outputs["message"])
	doc, err = b.r.Get(b.ctx, again.Run.ID)
	require.NoError(t, err)
	draft := stepOf(doc, "draft")
	require.True(t, draft.Pinned, "draft stays pinned after the resume")
	require.False(t, draft.Cached)
}
