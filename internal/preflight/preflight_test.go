package preflight_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/preflight"
	_ "github.com/skeinhq/skein/node/standard"
)

// write writes a workflow file in a fresh folder and returns its path.
func write(t *testing.T, name, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

// A model without a known price under limits.max_cost_usd is a validation
// warning that says how to set a price; with a price, none.
func TestValidateWarnsOfUnpricedModels(t *testing.T) {
	t.Parallel()
	src := `version: 1
name: unpriced
limits: {max_cost_usd: 0.50}
llm:
  default: {provider: openai, model: model-x, base_url: "http://127.0.0.1:9/v1", api_key: test PRICE}
nodes:
  - {id: ask, type: llm, prompt: hello}
`
	noEnv := preflight.Request{LookupEnv: func(string) (string, bool) { return "", false }}
	_, ds, err := preflight.Validate(write(t, "unpriced.yaml", strings.Replace(src, " PRICE", "", 1)), nil, noEnv)
	require.NoError(t, err)
	require.False(t, ds.HasErrors(), ds.Error())
	require.Len(t, ds, 1)
	require.Contains(t, ds[0].Message, "model model-x has no known price, so limits.max_cost_usd cannot count what it costs")
	require.Contains(t, ds[0].Message, "llm: {default: {…, price: {input_per_mtok: 1.0, output_per_mtok: 2.0}}}")

	_, ds, err = preflight.Validate(write(t, "priced.yaml", strings.Replace(src, " PRICE", ", price: {input_per_mtok: 1.0, output_per_mtok: 2.0}", 1)), nil, noEnv)
	require.NoError(t, err)
	require.Empty(t, ds)

	// An agent's vision model, which describes its tools' images, too.
	vision := strings.Replace(src, " PRICE", ", price: {input_per_mtok: 1.0, output_per_mtok: 2.0}}\n  vision: {provider: openai, model: eye-x, api_key: test", 1)
	_, ds, err = preflight.Validate(write(t, "vision.yaml", vision), nil, noEnv)
	require.NoError(t, err)
	require.Len(t, ds, 1, ds.Error())
	require.Contains(t, ds[0].Message, "model eye-x has no known price")
	require.Contains(t, ds[0].Message, "llm: {vision: {…, price:")
}

// validate reads a model list: a fallback without a known price under
// limits.max_cost_usd is reported, as the primary would be.
func TestValidateReadsModelLists(t *testing.T) {
	t.Parallel()
	file := write(t, "fallback.yaml", `version: 1
name: fallback
limits: {max_cost_usd: 0.50}
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "http://127.0.0.1:9/v1", api_key: test}
  backup: {provider: openai, model: model-x, base_url: "http://127.0.0.1:9/v1", api_key: test}
nodes:
  - {id: ask, type: llm, prompt: hello, model: [default, backup]}
`)
	_, ds, err := preflight.Validate(file, nil, preflight.Request{LookupEnv: func(string) (string, bool) { return "", false }})
	require.NoError(t, err)
	require.False(t, ds.HasErrors(), ds.Error())
	require.Len(t, ds, 1, ds.Error())
	require.Contains(t, ds[0].Message, "model model-x has no known price")
	require.Contains(t, ds[0].Message, "llm: {backup: {…, price:")
}
