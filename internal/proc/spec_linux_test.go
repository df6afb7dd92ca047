package proc

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSpecRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    spec
	}{
		{"plain", spec{path: "/bin/sh", args: []string{"sh", "-c", "echo hi"}, env: []string{"PATH=/bin"}}},
		{"no environment", spec{path: "/bin/true", args: []string{"true"}}},
		{"bytes that are not UTF-8", spec{path: "/bin/echo", args: []string{"echo", "\xff\x00"}, env: []string{"A=\xfe", "B="}}},
		{"empty arguments", spec{path: "/bin/echo", args: []string{"", ""}, env: []string{"X=1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := readSpec(bytes.NewReader(tt.s.encode()))
			require.NoError(t, err)
			require.Equal(t, tt.s, got)
		})
	}
	_, err := readSpec(bytes.NewReader([]byte{9, 0, 0, 0, 1}))
	require.Error(t, err, "cut short")
}

func FuzzDecodeSpec(f *testing.F) {
	f.Add(spec{path: "/bin/sh", args: []string{"sh", "-c", "x"}, env: []string{"A=1"}}.encode()[4:])
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSpec(b)
		if err != nil {
			return
		}
		again, err := decodeSpec(s.encode()[4:])
		require.NoError(t, err, "what decodes encodes back")
		require.Equal(t, len(s.args), len(again.args))
	})
}
