package plainjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/plainjson"
)

// indented writes text through an Indenter in pieces of the given sizes
// (the last size repeating).
func indented(t testing.TB, text []byte, sizes ...int) string {
	var out bytes.Buffer
	in := plainjson.NewIndenter(&out, "  ")
	for i := 0; len(text) > 0; i++ {
		n := min(sizes[min(i, len(sizes)-1)], len(text))
		written, err := in.Write(text[:n])
		require.NoError(t, err)
		require.Equal(t, n, written)
		text = text[n:]
	}
	return out.String()
}

// What an Indenter writes is what encoding/json's Encoder writes with
// SetIndent("", "  "), whatever pieces the compact text comes in: empty
// objects and lists stay {} and [], strings are copied as they are, their
// escaped quotes and backslashes and braces included.
func TestIndenterIsEncodingJSONs(t *testing.T) {
	t.Parallel()
	docs := []any{
		map[string]any{},
		[]any{},
		"a string",
		42,
		nil,
		map[string]any{"steps": []any{}, "outputs": map[string]any{}, "error": nil},
		map[string]any{"a": []any{1, 2.5, "x", true, nil, map[string]any{}, []any{}}, "b": map[string]any{"c": map[string]any{"d": []any{[]any{}}}}},
		map[string]any{`q"{[,:]}`: `tricky "quoted" \ {braces} [brackets], colons: and \"`, "ü": "\u2028<&>", "\\": "\\"},
		[]any{[]any{[]any{}}, map[string]any{"k": []any{map[string]any{"x": 1}}}},
	}
	for _, doc := range docs {
		var compact, want bytes.Buffer
		enc := json.NewEncoder(&compact)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(doc))
		enc = json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		require.NoError(t, enc.Encode(doc))
		for _, sizes := range [][]int{{compact.Len()}, {1}, {2}, {3, 7}, {5}} {
			require.Equal(t, want.String(), indented(t, compact.Bytes(), sizes...), "doc %v in pieces %v", doc, sizes)
		}
	}
}

// An Indenter returns the writer's error, not having written the piece.
func TestIndenterReturnsTheWritersError(t *testing.T) {
	t.Parallel()
	full := errors.New("no space left on device")
	in := plainjson.NewIndenter(failing{full}, "  ")
	n, err := in.Write([]byte(`{"a":1}`))
	require.ErrorIs(t, err, full)
	require.Zero(t, n)
}

type failing struct{ err error }

func (f failing) Write([]byte) (int, error) { return 0, f.err }

// FuzzIndent checks the Indenter against json.Indent on valid JSON of
// every shape, compacted and written in pieces of every size.
func FuzzIndent(f *testing.F) {
	f.Add([]byte(`{"a":[1,{},[]],"b":"x\"y\\"}`), uint8(1))
	f.Add([]byte(`[[[]],{"":{"":null}}]`), uint8(3))
	f.Add([]byte(` "\u00e9\ud83d\ude00" `), uint8(2))
	f.Fuzz(func(t *testing.T, text []byte, piece uint8) {
		if !json.Valid(text) {
			return
		}
		var compact, want bytes.Buffer
		require.NoError(t, json.Compact(&compact, text))
		require.NoError(t, json.Indent(&want, compact.Bytes(), "", "  "))
		require.Equal(t, want.String(), indented(t, compact.Bytes(), int(piece)+1))
	})
}
