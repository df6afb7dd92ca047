package server_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/server"
	_ "github.com/skeinhq/skein/node/standard"
)

// routesOf returns the routes an in-process server registers.
func routesOf(t *testing.T) []server.Route {
	t.Helper()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(t.TempDir(), ".skein")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	srv, err := server.New(server.Config{Runner: r, Workflows: t.TempDir()})
	require.NoError(t, err)
	return srv.Routes()
}

// TestOpenAPIMatchesRoutes: every route the server registers is in
// docs/openapi.yaml with the scope it needs, and every documented
// operation is a route.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/openapi.yaml")
	require.NoError(t, err)
	var doc struct {
		OpenAPI string                               `yaml:"openapi"`
		Paths   map[string]map[string]map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(data, &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3.1"), doc.OpenAPI)

	documented := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			scope, _ := op["x-skein-scope"].(string)
			documented[strings.ToUpper(method)+" "+path] = scope
		}
	}
	registered := map[string]string{}
	for _, rt := range routesOf(t) {
		registered[rt.Method+" "+rt.Path] = rt.Scope.String()
	}
	require.Equal(t, keys(registered), keys(documented), "documented routes = registered routes")
	require.Equal(t, registered, documented, "each route's x-skein-scope is the scope it needs")

	// The run schema the document refers to is the published one.
	require.Contains(t, string(data), `$ref: "../schema/run.schema.json"`)
	_, err = os.Stat("../../schema/run.schema.json")
	require.NoError(t, err)
}

// TestOpenAPIServed: GET /api/openapi.yaml answers docs/openapi.yaml as
// YAML to a token, and nothing without one.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	base, tok, _ := tokenServer(t, true)
	res := call(t, "GET", base+"/api/openapi.yaml", "", map[string]string{"Authorization": "Bearer " + tok})
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "application/yaml", res.Header.Get("Content-Type"))
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var doc struct {
		OpenAPI string         `yaml:"openapi"`
		Paths   map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(body, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Contains(t, doc.Paths, "/api/openapi.yaml", "the document describes its own route")
	want, err := os.ReadFile("../../docs/openapi.yaml")
	require.NoError(t, err)
	require.Equal(t, string(want), string(body), "the server answers docs/openapi.yaml as it is")

	res = call(t, "GET", base+"/api/openapi.yaml", "", nil)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "the spec is behind a token, as every route but the probes")
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
