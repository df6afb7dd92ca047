package flowtest

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine/scheduler"
)

// TestMocksKnowEveryDirective: a mock may answer with exactly the
// directives the scheduler reads, so a new one is not refused in tests.
func TestMocksKnowEveryDirective(t *testing.T) {
	require.ElementsMatch(t, scheduler.Known, slices.Collect(maps.Keys(directiveShapes)))
}
