package shell_test

import (
	"testing"

	"github.com/skeinhq/skein/internal/nodes/shell"
)

// BenchmarkRunTrue is the cost of one shell node around the smallest
// command: start `true`, wait for it, keep its (empty) output. On Linux
// that includes registering the command with the guardian.
func BenchmarkRunTrue(b *testing.B) {
	bn := &bundle{}
	s := &shell.Shell{}
	for b.Loop() {
		out, err := s.Run(b.Context(), bn.call(map[string]any{"command": []any{"true"}}))
		if err != nil || out["exit_code"] != 0 {
			b.Fatalf("true: %v %v", out, err)
		}
	}
}
