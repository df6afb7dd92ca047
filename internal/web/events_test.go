package web_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPageHearsEveryEventType: the run page's EventSource hears named
// events only by name (EVENT_TYPES in web/src/api.js); every event type
// the engine, the runner and the kinds record must be among them, or the
// page misses it until it reads the run again.
func TestPageHearsEveryEventType(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "..", "web", "src", "api.js"))
	require.NoError(t, err)
	list := regexp.MustCompile(`(?s)export const EVENT_TYPES = \[(.*?)\];`).FindSubmatch(src)
	require.NotNil(t, list, "EVENT_TYPES in web/src/api.js")
	heard := map[string]bool{}
	for _, m := range regexp.MustCompile(`"([a-z_]+)"`).FindAllSubmatch(list[1], -1) {
		heard[string(m[1])] = true
	}

	// Where event types are named in Go: a kind's Emit("…"), and the
	// Event… constants of the engine and the runner.
	patterns := []*regexp.Regexp{
		regexp.MustCompile(`\bEmit\("([a-z_]+)"`),
		regexp.MustCompile(`\bEvent[A-Za-z]*\s+(?:EventType\s+)?=\s+"([a-z_]+)"`),
		regexp.MustCompile(`\bType:\s+"(check_verdict)"`),
	}
	recorded := map[string]string{} // type → a file that records it
	for _, root := range []string{"..", filepath.Join("..", "..", "node")} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			text, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, p := range patterns {
				for _, m := range p.FindAllSubmatch(text, -1) {
					recorded[string(m[1])] = path
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.Contains(t, recorded, "node_started", "the scan finds the engine's events")
	require.Contains(t, recorded, "tool_call", "the scan finds the kinds' events")
	for typ, file := range recorded {
		require.True(t, heard[typ], "event type %q (recorded in %s) is not in EVENT_TYPES of web/src/api.js", typ, file)
	}
}
