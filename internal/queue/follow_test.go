package queue_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/queue"
)

// TestFollowTellsEachStepsChangesOnce: a follower that looks at a run
// while its workers go on with it (every millisecond here) tells each
// step's changes as they are written, each once, and the last it tells of
// a step is the step's end in the run's result: the skipped branch too,
// whose steps no event names, and the items of a foreach planned together.
func TestFollowTellsEachStepsChangesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	l := newLedger(t)
	run := b.start(t, fmt.Sprintf(`version: 1
name: told
nodes:
  - {id: hold, type: http, method: POST, url: "%s/held"}
  - {id: pick, type: if, condition: "true"}
  - {id: taken, type: set, values: {n: 1}}
  - {id: passed, type: set, values: {n: 2}}
  - {id: each, type: foreach, items: "{{ 1..5 }}"}
  - {id: item, type: set, values: {i: "{{ loop.item }}"}}
  - {id: next, type: endloop, loop: each}
edges:
  - {from: hold, to: pick}
  - {from: pick, to: taken, on: "true"}
  - {from: pick, to: passed, on: "false"}
  - {from: taken, to: each}
  - {from: each, to: item, on: body}
  - {from: item, to: next}
`, l.URL), nil)
	recv(t, l.held, "the held node's call")

	type told struct {
		status   engine.Status
		attempts int
	}
	var mu sync.Mutex
	tells := map[string][]told{}
	looked := make(chan struct{})
	var once sync.Once
	f := queue.Follow{Store: b.st, Registry: b.reg, RunID: run.ID, Every: time.Millisecond,
		Step: func(rec engine.StepRecord) {
			mu.Lock()
			defer mu.Unlock()
			k := fmt.Sprintf("%s#%d", rec.Node, rec.Visit)
			tells[k] = append(tells[k], told{rec.Status, rec.Attempts})
			if rec.Node == "hold" {
				once.Do(func() { close(looked) })
			}
		}}
	followed := make(chan *queue.Followed, 1)
	go func() {
		out, err := f.Run(t.Context())
		assert.NoError(t, err)
		followed <- out
	}()
	<-looked // the follower has told of the held step
	l.Release()
	out := <-followed
	require.True(t, out.Ended)
	require.Equal(t, "completed", string(out.Run.Status))

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, out.Result.Steps, 4+1+5*2, "hold, pick, taken, passed, each, and each item's two steps")
	for _, rec := range out.Result.Steps {
		k := fmt.Sprintf("%s#%d", rec.Node, rec.Visit)
		got := tells[k]
		require.NotEmpty(t, got, "%s was never told", k)
		require.Equal(t, told{rec.Status, rec.Attempts}, got[len(got)-1], "the last told of %s is its end", k)
		for i := 1; i < len(got); i++ {
			require.NotEqual(t, got[i-1], got[i], "%s: the same change told twice", k)
		}
	}
	require.Equal(t, engine.StatusSkipped, tells["passed#1"][len(tells["passed#1"])-1].status)
	require.Equal(t, engine.StatusRunning, tells["hold#1"][0].status, "the held step was told running while it ran")
}
