package expr

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lazyText is a Lazy text, as a big output kept in a file is.
type lazyText struct {
	text  string
	err   error
	loads *atomic.Int32
}

func (l lazyText) Load() (any, error) {
	if l.loads != nil {
		l.loads.Add(1)
	}
	return l.text, l.err
}

func (l lazyText) Size() int64 { return int64(len(l.text)) }

// lazyList is a Lazy list.
type lazyList []any

func (l lazyList) Load() (any, error) { return []any(l), nil }

func TestLazyValuesAreLoadedWhenRead(t *testing.T) {
	t.Parallel()
	loads := &atomic.Int32{}
	text := "hello " + strings.Repeat("x", 100)
	scope := &Scope{Nodes: map[string]any{
		"big":   map[string]any{"stdout": lazyText{text: text, loads: loads}, "exit_code": 0},
		"list":  map[string]any{"json": lazyList{map[string]any{"id": 7}, map[string]any{"id": 8}}},
		"items": map[string]any{"items": []any{map[string]any{"stdout": lazyText{text: "a"}}, map[string]any{"stdout": lazyText{text: "b"}}}},
	}}
	tests := []struct {
		tmpl string
		want any
	}{
		{"{{ big.stdout }}", text},
		{"{{ len(big.stdout) }}", len(text)},
		{"{{ big.stdout[0:5] }}", "hello"},
		{`{{ big.stdout startsWith "hello" }}`, true},
		{"{{ upper(big.stdout[0:5]) }}", "HELLO"},
		{"{{ list.json[1].id }}", 8},
		{"{{ len(list.json) }}", 2},
		{"{{ len(items.items) }}", 2},
		{`{{ join(map(items.items, .stdout), "+") }}`, "a+b"},
		{"{{ toJSON(items.items) }}", "[\n  {\n    \"stdout\": \"a\"\n  },\n  {\n    \"stdout\": \"b\"\n  }\n]"},
		{"got {{ items.items }}", `got [{"stdout":"a"},{"stdout":"b"}]`},
		{"got {{ big.stdout[0:5] }} and {{ big.exit_code }}", "got hello and 0"},
		{"{{ big.missing.deeper }}", nil},
	}
	for _, tt := range tests {
		tpl, err := ParseTemplate(tt.tmpl)
		require.NoError(t, err, tt.tmpl)
		got, err := tpl.Render(scope)
		require.NoError(t, err, tt.tmpl)
		require.Equal(t, tt.want, got, tt.tmpl)
	}
	require.Positive(t, loads.Load())

	// A value returned whole keeps its Lazy parts: the host resolves them.
	got, err := RenderValue("{{ items.items }}", scope)
	require.NoError(t, err)
	require.IsType(t, lazyText{}, got.([]any)[0].(map[string]any)["stdout"])

	before := loads.Load()
	_, err = RenderValue("{{ big.exit_code }}", scope)
	require.NoError(t, err)
	require.Equal(t, before, loads.Load(), "what is not read is not loaded")
}

func TestLazyLoadErrorsAndBudget(t *testing.T) {
	t.Parallel()
	scope := &Scope{Nodes: map[string]any{
		"gone": map[string]any{"stdout": lazyText{err: errors.New("no such file")}},
		"huge": map[string]any{"all": []any{lazyText{text: strings.Repeat("h", ByteBudget/2+1)}, lazyText{text: strings.Repeat("h", ByteBudget/2+1)}}},
	}}
	_, err := RenderValue("{{ gone.stdout }}", scope)
	require.ErrorContains(t, err, "reading a big value: no such file")

	_, err = RenderValue("all: {{ huge.all }}", scope)
	require.ErrorIs(t, err, ErrBudget)
	_, err = RenderValue("{{ toJSON(huge.all) }}", scope)
	require.ErrorIs(t, err, ErrBudget)
}

// slowLazy is a Lazy text whose loading takes a second of the clock
// clock counts (nanoseconds): a big value read from a busy disk.
type slowLazy struct {
	text  string
	clock *atomic.Int64
}

func (l slowLazy) Load() (any, error) {
	l.clock.Add(int64(time.Second))
	return l.text, nil
}

// The wall budget is the expression's own: a loop that reads 64 big values,
// each taking a second to load, finishes, while the same loop's own work
// past the budget stops it.
func TestLoadingBigValuesIsNotCountedAgainstTheWallBudget(t *testing.T) {
	t.Parallel()
	clock := &atomic.Int64{}
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	items := make([]any, 64)
	for i := range items {
		items[i] = map[string]any{"stdout": slowLazy{text: "abc", clock: clock}}
	}
	scope := &Scope{Nodes: map[string]any{"each": map[string]any{"items": items}}}
	p, err := compile("sum(map(each.items, len(.stdout)))")
	require.NoError(t, err)
	got, err := p.withClock(now, 100*time.Millisecond).Eval(scope)
	require.NoError(t, err)
	require.EqualValues(t, 3*64, got)
	require.EqualValues(t, 64*time.Second, clock.Load(), "every value was loaded")

	// The loop's own time still counts: a clock that also moves a second
	// at every read of the guard stops it.
	clock.Store(0)
	ticking := func() time.Time { return time.Unix(0, clock.Add(int64(time.Second))) }
	_, err = p.withClock(ticking, 100*time.Millisecond).Eval(scope)
	require.ErrorIs(t, err, ErrTimeout)
}
