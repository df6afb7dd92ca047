package runlog

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/record"
)

// The lines appendEventLine writes are those encoding/json writes, byte
// for byte; where it declines, the encoder writes the line.
func TestEventLinesAreEncodingJSONs(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 4, 19, 5, 6, 7008009, time.FixedZone("x", 3600))
	events := []engine.TimedEvent{
		{Time: at, Event: record.Event{Type: "node_started", Node: "a", Visit: 1}},
		{Time: at, Event: record.Event{Type: "node_finished", Node: "a", Visit: 1, Data: map[string]any{"status": "success"}}},
		{Time: at, Event: record.Event{Type: "execution_started", Data: map[string]any{"starts": []any{"start"}}}},
		{Time: at, Event: record.Event{Type: "loop_iteration", Node: "each", Visit: 2, Iteration: 7, Data: map[string]any{"index": 7, "total": int64(10)}}},
		{Time: at.Truncate(time.Second), Event: record.Event{Type: "t", Data: map[string]any{}}},
		{Time: time.Time{}, Event: record.Event{Type: "zero time", Visit: -1, Iteration: math.MaxInt}},
		{Time: time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), Event: record.Event{Type: "year 12000"}},
		{Time: at, Event: record.Event{Type: "html <b>&</b>", Node: "n", Data: map[string]any{"a&b": "<x>", "z": nil, "t": true, "f": false}}},
		{Time: at, Event: record.Event{Type: "quote \" and \\", Node: "n"}},
		{Time: at, Event: record.Event{Type: "t", Node: "ü"}},
		{Time: at, Event: record.Event{Type: "t", Node: "n", Data: map[string]any{"line": "a\nb", "sep": "\u2028", "bad": "\xff"}}},
		{Time: at, Event: record.Event{Type: "t", Data: map[string]any{"f": 1.5, "big": 1e21, "nested": map[string]any{"b": 1, "a": 2}}}},
		{Time: at, Event: record.Event{Type: "t", Data: map[string]any{"k1": 1, "k2": 2, "k3": 3, "k4": 4, "k5": 5, "k6": 6, "k7": 7, "k8": 8, "k9": 9}}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...any) any { return xs[rng.IntN(len(xs))] }
	for range 2000 {
		data := map[string]any{}
		for range rng.IntN(10) {
			k := pick("status", "index", "total", "Z", "a", "error", "ü", "<", "", "\t").(string)
			data[k] = pick(nil, true, false, 0, -3, int64(math.MinInt64), "success", "", "x\"y", "é", 2.5, []any{1}, map[string]any{})
		}
		if rng.IntN(4) == 0 {
			data = nil
		}
		events = append(events, engine.TimedEvent{
			Time:  time.Unix(rng.Int64N(1<<34)-1<<33, rng.Int64N(1e9)),
			Event: record.Event{Type: pick("node_started", "node_finished", "a<b").(string), Node: pick("", "n1", "node \"q\"").(string), Visit: rng.IntN(5), Iteration: rng.IntN(3), Data: data},
		})
	}
	fast := 0
	for _, ev := range events {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		werr := enc.Encode(eventLine{Time: ev.Time.UTC(), Type: ev.Type, Node: ev.Node, Visit: ev.Visit, Iteration: ev.Iteration, Data: ev.Data})
		got, ok := appendEventLine(nil, ev)
		if ok {
			fast++
			require.NoError(t, werr)
			require.Equal(t, want.String(), string(got))
		}
		var e eventEncoder
		err := e.add(ev)
		if werr != nil {
			require.Error(t, err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, want.String(), e.buf.String())
	}
	require.Greater(t, fast, len(events)/4, "the lines of nodes' starts and ends take the fast way")
}

func BenchmarkEventLine(b *testing.B) {
	ev := engine.TimedEvent{Time: time.Now(), Event: record.Event{Type: "node_finished", Node: "n42", Visit: 1, Data: map[string]any{"status": "success"}}}
	var e eventEncoder
	b.ReportAllocs()
	for b.Loop() {
		e.buf.Reset()
		if err := e.add(ev); err != nil {
			b.Fatal(err)
		}
	}
}
