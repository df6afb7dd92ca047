package rundoc

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/node"
)

// The text appendStep writes for a step is encoding/json's, byte for
// byte; where it declines, WriteJSON asks encoding/json.
func TestStepTextIsEncodingJSONs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	pick := func(xs ...any) any { return xs[rng.IntN(len(xs))] }
	at := time.Date(2026, 12, 4, 20, 1, 2, 3004000, time.UTC)
	times := []*time.Time{nil, &at, ptr(at.In(time.FixedZone("x", -7200))), ptr(time.Time{}), ptr(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)), ptr(at.Truncate(time.Second))}
	fast := 0
	for range 8000 {
		s := Step{
			Node: pick("a", "n42", "", "ü", "q\"").(string), Type: pick("set", "http", "a<b>").(string),
			Status: pick(record.StatusSuccess, record.StatusFailed, record.Status("")).(record.Status),
			Visit:  rng.IntN(4) - 1, Iteration: rng.IntN(3), Attempts: rng.IntN(3),
			SkipReason: pick("", "branch_not_taken").(string), TakenHandle: pick("", "true", "\n").(string),
			StepOrder: rng.IntN(1e6),
			Params:    pick(map[string]any(nil), map[string]any{}, map[string]any{"values": map[string]any{"i": 1}}, map[string]any{"url": "http://x/?a=1&b=<2>"}, map[string]any{"f": 1e300}).(map[string]any),
			Output:    pick(map[string]any(nil), map[string]any{}, map[string]any{"i": 7, "s": "x"}, map[string]any{"t": at}).(map[string]any),
			Error:     pick((*node.Error)(nil), (*node.Error)(nil), &node.Error{Code: "x", Message: "m"}).(*node.Error),
			Cached:    rng.IntN(2) == 0, Pinned: rng.IntN(2) == 0,
			StartedAt: times[rng.IntN(len(times))], FinishedAt: times[rng.IntN(len(times))], WakeAt: times[rng.IntN(len(times))],
			DurationMS: rng.Int64N(1e6), Tokens: rng.IntN(100),
			CostUSD:    pick(0.0, 0.0015, 12.5, 1e-9, math.Copysign(0, -1)).(float64),
			RanOn:      pick((*record.Place)(nil), &record.Place{Host: "h"}, &record.Place{Host: "h", PID: 12, Worker: "w1"}, &record.Place{Host: "é"}).(*record.Place),
			Confidence: pick((*float64)(nil), ptr(0.75), ptr(1.0), ptr(math.NaN())).(*float64),
			Artifacts:  pick([]record.Artifact(nil), []record.Artifact{}, []record.Artifact{{Name: "a", Size: 1, SHA256: "x"}}).([]record.Artifact),
			ConfigHash: "not written", Generation: 3, Mocked: true,
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		werr := enc.Encode(&s)
		got, ok := appendStep([]byte("["), &s)
		if !ok {
			continue
		}
		fast++
		require.NoError(t, werr)
		require.Equal(t, "["+string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))), string(got))
	}
	require.Greater(t, fast, 100, "plain steps take the fast way")
}

func ptr[T any](v T) *T { return &v }
