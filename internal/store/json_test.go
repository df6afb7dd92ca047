package store_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
)

func TestDecodeMap(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name string
		json string
		want map[string]any
	}{
		{"absent", ``, nil},
		{"empty", `{}`, map[string]any{}},
		{"whole number", `{"n": 3}`, map[string]any{"n": 3}},
		{"negative", `{"n": -3}`, map[string]any{"n": -3}},
		{"fraction", `{"n": 2.5}`, map[string]any{"n": 2.5}},
		{"whole with a fraction part", `{"n": 2.0}`, map[string]any{"n": 2}},
		{"exponent", `{"n": 1e3}`, map[string]any{"n": 1000}},
		{"past 2^53 with exponent", `{"n": 1e300}`, map[string]any{"n": 1e300}},
		{"largest int", `{"n": 9223372036854775807}`, map[string]any{"n": 9223372036854775807}},
		{"past int64", `{"n": 9223372036854775808}`, map[string]any{"n": 9223372036854775808.0}},
		{"nested", `{"a": [1, {"b": 2.25}, [3]]}`, map[string]any{"a": []any{1, map[string]any{"b": 2.25}, []any{3}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := store.DecodeMap([]byte(tc.json))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}

	_, err := store.DecodeMap([]byte(`{"a": 1} {"b": 2}`))
	require.Error(t, err, "trailing data is refused")
	_, err = store.DecodeMap([]byte(`[1]`))
	require.Error(t, err, "only objects are maps")
}

func TestEncodeRoundTrip(t *testing.T) {
	t.Parallel()

	m := map[string]any{"html": "<a href='x'>&</a>", "n": 7, "f": 0.1}
	data, err := store.EncodeMap(m)
	require.NoError(t, err)
	require.Contains(t, string(data), "<a href='x'>&</a>", "HTML is not escaped")
	back, err := store.DecodeMap(data)
	require.NoError(t, err)
	require.Equal(t, m, back)

	data, err = store.EncodeMap(nil)
	require.NoError(t, err)
	require.Nil(t, data, "a nil map is stored as NULL")

	e := &node.Error{Code: "c", Category: "http", Message: "m", Details: map[string]any{"status": 404}, Permanent: true}
	data, err = store.EncodeError(e)
	require.NoError(t, err)
	got, err := store.DecodeError(data)
	require.NoError(t, err)
	require.Equal(t, &node.Error{Code: "c", Category: "http", Message: "m", Details: map[string]any{"status": 404}}, got,
		"the fields a node error shows round-trip")
}

// TestBytesThatAreNotUTF8RoundTrip: a command's raw bytes come back as
// they were, not with U+FFFD in place of the bad ones.
func TestBytesThatAreNotUTF8RoundTrip(t *testing.T) {
	t.Parallel()
	raw := "\xff\xfeok\x80"
	in := map[string]any{"stdout": raw, "list": []any{"fine", raw}, "nested": map[string]any{"b": raw}, "plain": "é"}
	data, err := store.EncodeMap(in)
	require.NoError(t, err)
	require.True(t, utf8.Valid(data), "the stored JSON is valid UTF-8")
	out, err := store.DecodeMap(data)
	require.NoError(t, err)
	require.Equal(t, in, out)
	require.Equal(t, "\xff\xfeok\x80", in["stdout"], "the caller's map is not changed")
}

// TestReplacementCharactersAreNotBadBytes: a real U+FFFD and the text
// "\ufffd" in a string are kept as they are, beside a string of bad bytes
// and without one.
func TestReplacementCharactersAreNotBadBytes(t *testing.T) {
	t.Parallel()
	for _, in := range []map[string]any{
		{"real": "a\uFFFDb", "text": `a\ufffdb`},
		{"real": "a\uFFFDb", "text": `a\ufffdb`, "raw": "\xffz", "list": []any{`\ufffd`, "\uFFFD"}},
		{"typed": []string{"\xff"}, "text": `\ufffd`},
	} {
		data, err := store.EncodeMap(in)
		require.NoError(t, err)
		require.True(t, utf8.Valid(data), "the stored JSON is valid UTF-8")
		out, err := store.DecodeMap(data)
		require.NoError(t, err)
		if typed, ok := in["typed"]; ok {
			// Outside map[string]any and []any a bad byte becomes U+FFFD,
			// as encoding/json writes it.
			require.Equal(t, []string{"\xff"}, typed)
			require.Equal(t, map[string]any{"typed": []any{"\uFFFD"}, "text": `\ufffd`}, out)
			continue
		}
		require.Equal(t, in, out)
	}
}

// Encoders are reused: each document keeps bytes of its own, whatever is
// encoded after it (a big one too, whose buffer is not kept), and a value
// that cannot be encoded leaves nothing behind for the next.
func TestEncodedDocumentsKeepTheirBytes(t *testing.T) {
	var docs [][]byte
	want := func(i int) string { return fmt.Sprintf(`{"doc":%d,"text":"<&> %d"}`, i, i) }
	for i := range 20 {
		b, err := store.EncodeMap(map[string]any{"doc": i, "text": fmt.Sprintf("<&> %d", i)})
		require.NoError(t, err)
		docs = append(docs, b)
		if i == 10 {
			_, err = store.EncodeMap(map[string]any{"bad": func() {}})
			require.Error(t, err)
			big, err := store.EncodeMap(map[string]any{"b": strings.Repeat("x", 100<<10)})
			require.NoError(t, err)
			require.Equal(t, `{"b":"`+strings.Repeat("x", 100<<10)+`"}`, string(big))
		}
	}
	for i, b := range docs {
		require.Equal(t, want(i), string(b), "document %d, HTML characters as they are", i)
	}
}
