package standard_test

import (
	"testing"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/node/nodetest"
	_ "github.com/skeinhq/skein/node/standard"
)

// TestConformance runs the node conformance suite over every built-in kind.
func TestConformance(t *testing.T) {
	nodetest.Run(t, node.Default)
}
