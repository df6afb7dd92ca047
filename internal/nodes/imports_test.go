package nodes_test

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// module is the module path; the packages under it are found in the
// repository, two folders up.
const module = "github.com/skeinhq/skein"

// A kind must not reach these, directly or through the packages it
// imports: the verification pass, the application layer, the engine.
var bannedDeps = []string{"internal/check", "internal/runner", "internal/engine"}

// A kind must not import these itself. (The trigger kind checks cron
// expressions with internal/schedule, which keeps schedules in the store:
// the store is reached, but no kind uses it.)
var bannedImports = []string{"internal/store"}

// TestKindsImportNoUpperLayer fails when a package under internal/nodes
// imports internal/check (the judge of checks is internal/check/judge,
// over the provider interface), internal/runner or internal/engine —
// directly or through another package — or imports internal/store or a
// store dialect itself.
func TestKindsImportNoUpperLayer(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module's root is two folders up")
	kinds := kindPackages(t, root)
	require.Contains(t, kinds, module+"/internal/nodes/llm", "the kinds are found")
	require.Contains(t, kinds, module+"/internal/nodes/trigger")

	got, err := violations(kinds, func(pkg string) ([]string, error) {
		p, err := build.Default.ImportDir(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(pkg, module))), 0)
		var none *build.NoGoError
		if errors.As(err, &none) {
			return nil, nil
		}
		return p.Imports, err
	})
	require.NoError(t, err)
	require.Empty(t, got, "a node kind reaches runs, stores and checks only through the services of its node.Call")
}

// TestViolationsNamesTheChain proves the rule on a made-up import graph:
// a banned package reached through another is reported with the chain
// that leads to it; a store import is reported only when a kind makes it.
func TestViolationsNamesTheChain(t *testing.T) {
	t.Parallel()
	m := func(p string) string { return module + "/" + p }
	graph := map[string][]string{
		m("internal/nodes/good"):     {"fmt", m("internal/llm"), m("node")},
		m("internal/nodes/judging"):  {m("internal/llm/registry")},
		m("internal/llm/registry"):   {m("internal/check/judge")},
		m("internal/check/judge"):    {m("internal/check")},
		m("internal/check"):          {m("internal/engine")},
		m("internal/nodes/storing"):  {m("internal/store/sqlite")},
		m("internal/nodes/cron"):     {m("internal/schedule")},
		m("internal/schedule"):       {m("internal/store")},
		m("internal/nodes/running"):  {m("internal/runner")},
		m("internal/nodes/checking"): {m("internal/check")},
	}
	var kinds []string
	for p := range graph {
		if strings.HasPrefix(p, m("internal/nodes/")) {
			kinds = append(kinds, p)
		}
	}
	slices.Sort(kinds)
	got, err := violations(kinds, func(pkg string) ([]string, error) { return graph[pkg], nil })
	require.NoError(t, err)
	require.Equal(t, []string{
		"internal/nodes/checking imports internal/check",
		"internal/nodes/judging imports internal/llm/registry → internal/check/judge",
		"internal/nodes/running imports internal/runner",
		"internal/nodes/storing imports internal/store/sqlite",
	}, got)
}

// kindPackages are the packages under internal/nodes with Go files.
func kindPackages(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(root, "internal", "nodes"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if pkg := module + "/" + filepath.ToSlash(rel); pkg != module+"/internal/nodes" {
			out = append(out, pkg)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// violations walks the module's packages each kind imports (imports gives
// a package's imports, without its tests') and says, for each banned
// package a kind reaches, the chain of imports that leads there.
func violations(kinds []string, imports func(pkg string) ([]string, error)) ([]string, error) {
	banned := func(pkg string, list []string) (string, bool) {
		for _, b := range list {
			if pkg == module+"/"+b || strings.HasPrefix(pkg, module+"/"+b+"/") {
				return b, true
			}
		}
		return "", false
	}
	short := func(pkg string) string { return strings.TrimPrefix(pkg, module+"/") }
	var out []string
	for _, kind := range kinds {
		via := map[string]string{kind: ""} // package → the package that imports it
		queue := []string{kind}
		for len(queue) > 0 {
			pkg := queue[0]
			queue = queue[1:]
			imps, err := imports(pkg)
			if err != nil {
				return nil, err
			}
			for _, imp := range imps {
				if _, seen := via[imp]; seen || !strings.HasPrefix(imp, module+"/") {
					continue
				}
				via[imp] = pkg
				_, deep := banned(imp, bannedDeps)
				_, direct := banned(imp, bannedImports)
				if deep || (direct && pkg == kind) {
					chain := []string{short(imp)}
					for p := pkg; p != kind; p = via[p] {
						chain = append([]string{short(p)}, chain...)
					}
					out = append(out, short(kind)+" imports "+strings.Join(chain, " → "))
					continue // reported: what it imports is its own matter
				}
				queue = append(queue, imp)
			}
		}
	}
	return out, nil
}
