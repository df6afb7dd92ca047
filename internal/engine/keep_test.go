package engine_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
)

// keepPlan has a plain node and a foreach, the two ways Keep treats an
// output.
func keepPlan(t *testing.T) (act, each *engine.PlanNode) {
	p := mustPlan(t, wf(`
  - {id: start, type: trigger.manual}
  - {id: act1, type: act}
  - {id: each, type: foreach, items: "{{ [1] }}"}
  - {id: body, type: act}
  - {id: eend, type: endloop, loop: each}
`, `
  - {from: start, to: act1}
  - {from: act1, to: each}
  - {from: each, to: body, on: body}
  - {from: body, to: eend}
`))
	for _, pn := range p.Nodes {
		switch pn.ID {
		case "act1":
			act = pn
		case "each":
			each = pn
		}
	}
	return act, each
}

// Both drivers keep a task's big values the same way: its output, the
// variables it sets and its parameters go to the blob store they pass in;
// small values and a foreach's list of items stay as they are.
func TestKeepMovesATasksBigValuesToTheStore(t *testing.T) {
	t.Parallel()
	act, each := keepPlan(t)
	st, err := blob.NewStore(t.TempDir(), nil)
	require.NoError(t, err)
	big := strings.Repeat("x", blob.InlineLimit+1)

	oc, params := engine.Keep(st, nil, act, engine.Outcome{
		Output:     map[string]any{"text": big, "n": 1},
		Directives: map[string]any{"_state_patch": map[string]any{"v": big}},
	}, map[string]any{"prompt": big, "small": "s"})
	require.Nil(t, oc.Err)
	assert.IsType(t, &blob.Blob{}, oc.Output["text"])
	assert.Equal(t, 1, oc.Output["n"])
	assert.IsType(t, &blob.Blob{}, oc.Directives["_state_patch"].(map[string]any)["v"])
	assert.IsType(t, &blob.Blob{}, params["prompt"])
	assert.Equal(t, "s", params["small"])

	items := []any{big, "b"}
	oc, _ = engine.Keep(st, nil, each, engine.Outcome{Output: map[string]any{"items": items}}, nil)
	require.Nil(t, oc.Err)
	kept, ok := oc.Output["items"].([]any)
	require.True(t, ok, "a foreach's items stay a list: %T", oc.Output["items"])
	assert.IsType(t, &blob.Blob{}, kept[0])
	assert.Equal(t, "b", kept[1])

	// No store: nothing moves.
	oc, params = engine.Keep(nil, nil, act, engine.Outcome{Output: map[string]any{"text": big}}, map[string]any{"p": big})
	assert.Equal(t, big, oc.Output["text"])
	assert.Equal(t, big, params["p"])
}

// A run's memory budget, once spent, moves values far smaller than the
// inline limit; the queue passes none, so only values over the limit move.
func TestKeepHoldsToTheMemoryBudget(t *testing.T) {
	t.Parallel()
	act, _ := keepPlan(t)
	st, err := blob.NewStore(t.TempDir(), nil)
	require.NoError(t, err)
	mid := strings.Repeat("y", 4*blob.MinSize)

	mem := blob.NewBudget(blob.InlineLimit)
	mem.Add(blob.InlineLimit) // spent
	oc, _ := engine.Keep(st, mem, act, engine.Outcome{Output: map[string]any{"text": mid}}, nil)
	assert.IsType(t, &blob.Blob{}, oc.Output["text"])

	oc, _ = engine.Keep(st, nil, act, engine.Outcome{Output: map[string]any{"text": mid}}, nil)
	assert.Equal(t, mid, oc.Output["text"])
}

// A store that cannot write fails the attempt, keeping the kind's own
// error when it failed already.
func TestKeepFailingFailsTheAttempt(t *testing.T) {
	t.Parallel()
	act, _ := keepPlan(t)
	st := blob.New(brokenBackend{}, nil)
	big := strings.Repeat("x", blob.InlineLimit+1)

	oc, _ := engine.Keep(st, nil, act, engine.Outcome{Output: map[string]any{"text": big}}, nil)
	require.NotNil(t, oc.Err)
	assert.Equal(t, "big_value", oc.Err.Code)
	assert.Nil(t, oc.Output)

	own := &node.Error{Code: "http_status", Message: "500"}
	oc, _ = engine.Keep(st, nil, act, engine.Outcome{Output: map[string]any{"text": big}, Err: own}, nil)
	assert.Same(t, own, oc.Err)

	outs := map[string]any{"report": big}
	got, err2 := engine.KeepOutputs(st, outs)
	require.NotNil(t, err2)
	assert.Equal(t, "big_value", err2.Code)
	assert.Equal(t, outs, got)
}

// brokenBackend fails every write (a full disk).
type brokenBackend struct{}

func (brokenBackend) Kind() string                                   { return "broken" }
func (brokenBackend) Stage() (*os.File, error)                       { return nil, errors.New("no space left on device") }
func (brokenBackend) Keep(context.Context, string, *blob.Blob) error { return errors.New("no space") }
func (brokenBackend) Has(context.Context, *blob.Blob) (bool, error)  { return false, nil }
func (brokenBackend) Open(context.Context, string) (io.ReadCloser, error) {
	return nil, blob.ErrNotFound
}
func (brokenBackend) Path(string) string { return "" }
