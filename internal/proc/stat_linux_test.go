package proc

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	// session … then starttime, the 22nd field.
	tail := " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 4242 17 18\n"
	tests := []struct {
		name string
		line string
		want stat
		err  bool
	}{
		{"plain", "123 (sleep) S 1 77 77" + tail, stat{state: 'S', ppid: 1, pgrp: 77, startTicks: 4242}, false},
		{"spaces and parentheses in the name", "123 (a) (b c) Z 1 78 77" + tail, stat{state: 'Z', ppid: 1, pgrp: 78, startTicks: 4242}, false},
		{"no name", "123 sleep S 1 77 77" + tail, stat{}, true},
		{"cut short", "123 (sleep) S 1 77 77 0 0\n", stat{}, true},
		{"garbled group", "123 (sleep) S 1 x 77" + tail, stat{}, true},
		{"garbled parent", "123 (sleep) S x 77 77" + tail, stat{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseStat([]byte(tt.line))
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// This process, read the way KillGroup reads any: its group is ours and it
// started moments ago.
func TestStatOfSelf(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("/proc/self/stat")
	require.NoError(t, err)
	s, err := parseStat(b)
	require.NoError(t, err)
	require.Equal(t, syscall.Getpgrp(), s.pgrp)
	boot, err := bootTime()
	require.NoError(t, err)
	started := s.startTime(boot, clockTicks())
	require.WithinRange(t, started, time.Now().Add(-10*time.Minute), time.Now().Add(startSlack))
}

func TestStartTime(t *testing.T) {
	t.Parallel()
	boot := time.Unix(1_700_000_000, 0)
	require.Equal(t, boot.Add(12*time.Second+340*time.Millisecond), stat{startTicks: 1234}.startTime(boot, 100))
	require.Equal(t, boot.Add(2*time.Second+500*time.Millisecond), stat{startTicks: 5}.startTime(boot, 2))
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("123 (a) (b c) S 1 78 77 1 2 3 4 5 6 7 8 9 10 11 12 4242 17 18\n"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseStat(b) // never panics
	})
}
