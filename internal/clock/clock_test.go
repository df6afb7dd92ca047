package clock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFakeNextAndAdvance: Next names the earliest timer not fired;
// Advance fires the timers it passes, in order, and a stopped timer
// never fires.
func TestFakeNextAndAdvance(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewFake(start)
	_, ok := c.Next()
	require.False(t, ok, "no timer yet")
	var fired []string
	c.AfterFunc(2*time.Second, func() { fired = append(fired, "two") })
	c.AfterFunc(time.Second, func() { fired = append(fired, "one") })
	stop := c.AfterFunc(1500*time.Millisecond, func() { fired = append(fired, "stopped") })
	require.True(t, stop())
	next, ok := c.Next()
	require.True(t, ok)
	require.Equal(t, start.Add(time.Second), next)
	c.Advance(3 * time.Second)
	require.Equal(t, []string{"one", "two"}, fired)
	require.Zero(t, c.Pending())
	require.Equal(t, start.Add(3*time.Second), c.Now())
}
