package benchproc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParseStat reads utime and stime after the command name, whatever
// the name holds.
func TestParseStat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
		err        string
	}{
		{name: "plain", stat: "42 (skein) S 1 42 42 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 9 0 100 1000 50\n", want: 2810 * time.Millisecond},
		{name: "command with spaces and parentheses", stat: "42 (a) b (c) R 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 9 0 100 1000 50\n", want: 100 * time.Millisecond},
		{name: "no command", stat: "42 skein S 1", err: "no command name"},
		{name: "cut short", stat: "42 (skein) S 1 42 42", err: "too few fields"},
		{name: "not a number", stat: "42 (skein) S 1 42 42 0 -1 4194560 100 0 0 0 x 31 0", err: "utime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseStat([]byte(tc.stat))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestParseStatus reads the resident set and its peak, in bytes.
func TestParseStatus(t *testing.T) {
	t.Parallel()
	now, peak, err := parseStatus([]byte("Name:\tskein\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t9\n"))
	require.NoError(t, err)
	require.Equal(t, int64(10240<<10), now)
	require.Equal(t, int64(20480<<10), peak)

	_, _, err = parseStatus([]byte("Name:\tkthreadd\nState:\tS (sleeping)\n"))
	require.ErrorContains(t, err, "no VmRSS", "a process without memory of its own, or a zombie")
}
