package engine_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// streamedHash is ConfigHash as it was first written: the pieces written
// one by one into a SHA-256 (json.Marshal for the maps). A step's hash
// decides whether a resume reuses it, so it must not change from one
// version to the next.
func streamedHash(def []byte, params, loop map[string]any, upstream []string) string {
	h := sha256.New()
	h.Write(def)
	h.Write([]byte{0})
	p, _ := json.Marshal(params)
	h.Write(p)
	h.Write([]byte{0})
	if loop != nil {
		l, _ := json.Marshal(loop)
		h.Write(l)
	}
	h.Write([]byte{0})
	up := append([]string(nil), upstream...)
	sort.Strings(up)
	for _, u := range up {
		h.Write([]byte(u))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestConfigHashIsStable: ConfigHash gives the hash it always gave, for
// parameters plain and not (HTML characters, non-ASCII text, a value
// json.Marshal cannot encode, a big one), with and without a loop context,
// and upstream hashes in any order.
func TestConfigHashIsStable(t *testing.T) {
	t.Parallel()
	def := []byte(`{"id":"n","type":"set"}`)
	big := strings.Repeat("x", 100<<10)
	for _, params := range []map[string]any{
		nil,
		{},
		{"values": map[string]any{"i": 1, "s": "text", "b": true, "n": nil, "f": 1.5, "l": []any{1, "a"}}},
		{"html": "<a href='x'>&</a>", "text": "héllo \u2028 \"q\""},
		{"nan": math.NaN()},
		{"big": big},
	} {
		for _, loop := range []map[string]any{nil, {"item": 3, "index": 2, "total": 5}} {
			for _, up := range [][]string{nil, {"b"}, {"c", "a", "b"}, {"a", "b"}} {
				require.Equal(t, streamedHash(def, params, loop, up), engine.ConfigHash(def, params, loop, up))
			}
		}
	}
	require.Equal(t, "317f2942303a7ce9bd1a6f3f8f81143a3db13db20cc8aefcdd31a82f6a6717a7",
		engine.ConfigHash(def, map[string]any{"values": map[string]any{"i": 1}}, nil, []string{"up"}), "the hash of a step does not change between versions")
}
