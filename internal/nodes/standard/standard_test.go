package standard_test

import (
	"testing"

	_ "github.com/skeinhq/skein/internal/nodes/standard"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/node/nodetest"
)

// TestConformance runs the node conformance suite over every built-in kind.
func TestConformance(t *testing.T) {
	nodetest.Run(t, node.Default)
}
