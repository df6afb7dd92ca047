package node_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
)

// TestParseDuration reads every way a duration is written, and says of
// each that is refused why: not a duration, negative, or longer than a
// duration holds.
func TestParseDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"500ms": 500 * time.Millisecond, "1h30m": 90 * time.Minute, "2d": 48 * time.Hour,
		"1.5": 1500 * time.Millisecond, " 30s ": 30 * time.Second, "0d": 0, "106751d": 106751 * 24 * time.Hour,
	} {
		got, err := node.ParseDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for in, msg := range map[string]string{
		"soon":                  `"soon" is not a duration (write e.g. 500ms, 30s, 5m, 1h30m or 2d)`,
		"3x":                    `"3x" is not a duration`,
		"-1d":                   `"-1d" is negative; durations are 0 or more`,
		"-5m":                   `"-5m" is negative; durations are 0 or more`,
		"-2":                    `"-2" is negative`,
		"106752d":               `"106752d" is too long a duration (at most 106751d)`,
		"99999999999999999999d": `is too long a duration (at most 106751d)`,
		"9999999h":              `"9999999h" is too long a duration (at most 106751d)`,
		"2562048h":              `"2562048h" is too long a duration`,
		"1e300":                 `"1e300" is too long a duration`,
	} {
		_, err := node.ParseDuration(in)
		require.ErrorContains(t, err, msg, in)
	}
}
