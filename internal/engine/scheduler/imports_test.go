package scheduler

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPureImports: the scheduler imports nothing that does I/O — no
// files, network, processes, clock reads through os or the store.
func TestPureImports(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{
		"fmt": true, "hash/fnv": true, "math": true, "sort": true, "time": true,
		"github.com/skeinhq/skein/expr": true, "github.com/skeinhq/skein/node": true,
		"github.com/skeinhq/skein/workflow": true, "github.com/skeinhq/skein/internal/record": true,
		// The retry schedule, used without its randomization.
		"github.com/cenkalti/backoff/v5": true,
	}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range parsed.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			require.True(t, allowed[path], "%s imports %s: the scheduler does no I/O", f, path)
		}
	}
}
