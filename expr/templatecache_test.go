package expr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A template rendered again is parsed once, and each rendering reads its
// own scope; a template that does not compile fails each time alike.
func TestRenderedTemplatesAreParsedOnce(t *testing.T) {
	t.Parallel()
	src := "item {{ loop.index }} of {{ loop.total }}: {{ loop.item }}"
	for i, item := range []string{"a", "b", "c"} {
		got, err := RenderValue(src, &Scope{Loop: map[string]any{"index": i, "total": 3, "item": item}})
		require.NoError(t, err)
		require.Equal(t, "item "+string(rune('0'+i))+" of 3: "+item, got)
	}
	first, ok := templates.get(src)
	require.True(t, ok, "kept once parsed")
	_, err := RenderValue(src, &Scope{Loop: map[string]any{"index": 9, "total": 9, "item": "z"}})
	require.NoError(t, err)
	again, _ := templates.get(src)
	require.Same(t, first, again, "not parsed again")

	for range 2 {
		_, err := RenderValue("{{ 1 + }}", &Scope{})
		require.Error(t, err)
		_, err = RenderValue("{{ unclosed", &Scope{})
		require.Error(t, err)
	}
}

// The cache starts over when full, and keeps what is put after.
func TestSourceCacheIsBounded(t *testing.T) {
	t.Parallel()
	c := newSourceCache[int]()
	for i := range sourceCacheSize + 10 {
		c.put(string(rune(i+0x100)), i)
	}
	require.LessOrEqual(t, len(c.m), sourceCacheSize)
	v, ok := c.get(string(rune(sourceCacheSize + 9 + 0x100)))
	require.True(t, ok)
	require.Equal(t, sourceCacheSize+9, v)
}
