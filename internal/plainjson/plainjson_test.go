package plainjson_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/plainjson"
)

// What AppendMap writes is what encoding/json writes, byte for byte, with
// and without HTML escaping; where it declines, encoding/json is asked.
func TestAppendMapIsEncodingJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	scalars := []any{nil, true, false, 0, 1, -7, math.MaxInt64, int64(math.MinInt64), 0.0, math.Copysign(0, -1), 1.5, -2.25, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125,
		math.NaN(), math.Inf(1), float32(1.5), uint8(3), "", "ok", "a b", "<b>&", "q\"", "back\\", "tab\t", "ü", "\u2028", "\xff", "~"}
	keys := []string{"a", "b", "B", "status", "", "<", "é", "a\"", "z9", "i", "values"}
	var value func(depth int) any
	value = func(depth int) any {
		switch n := rng.IntN(20); {
		case n < 12 || depth >= 4:
			return scalars[rng.IntN(len(scalars))]
		case n == 12: // more keys than AppendMap takes
			m := map[string]any{}
			for k := range 17 + rng.IntN(3) - 2 {
				m[string(rune('a'+k))] = k
			}
			return m
		case n == 13: // more items than it takes
			l := make([]any, 62+rng.IntN(4))
			for i := range l {
				l[i] = i
			}
			return l
		case n == 14:
			return map[string]any(nil)
		case n == 15:
			return []any(nil)
		case n < 18:
			m := map[string]any{}
			for range rng.IntN(5) {
				m[keys[rng.IntN(len(keys))]] = value(depth + 1)
			}
			return m
		default:
			var l []any
			for range rng.IntN(5) {
				l = append(l, value(depth+1))
			}
			return l
		}
	}
	deep := any(1)
	for range 10 {
		deep = map[string]any{"a": deep}
	}
	scalars = append(scalars, deep)
	fast := 0
	for i := range 5000 {
		m := map[string]any{}
		for range rng.IntN(6) {
			m[keys[rng.IntN(len(keys))]] = value(0)
		}
		if i == 0 {
			m = nil
		}
		for _, html := range []bool{true, false} {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(html)
			werr := enc.Encode(m)
			got, ok := plainjson.AppendMap([]byte("prefix"), m, html)
			if !ok {
				continue
			}
			fast++
			require.NoError(t, werr)
			require.Equal(t, "prefix"+string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))), string(got), "%#v", m)
		}
	}
	require.Greater(t, fast, 1000, "plain maps take the fast way")
}
