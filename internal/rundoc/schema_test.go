package rundoc_test

import (
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/rundoc"
)

var update = flag.Bool("update", false, "rewrite schema/run.schema.json from rundoc.Doc")

const schemaFile = "../../schema/run.schema.json"

// The published schema is the one Schema generates from Doc.
func TestSchemaUpToDate(t *testing.T) {
	t.Parallel()
	got, err := rundoc.Schema()
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile(schemaFile, got, 0o644))
	}
	want, err := os.ReadFile(schemaFile)
	require.NoError(t, err, "create it with: go test ./internal/rundoc -update")
	require.Equal(t, string(want), string(got), "schema/run.schema.json is stale; refresh it with: go test ./internal/rundoc -update")
}
