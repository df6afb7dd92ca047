package pathscrub_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/pathscrub"
)

// TestScrubPaths: a detail names the server's paths relative to its
// folders, other absolute paths by their last element, and leaves the
// request's own path, API routes and URLs alone.
func TestScrubPaths(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "srv", ".skein")
	flows := filepath.Join(t.TempDir(), "flows")
	ps := pathscrub.New(map[string]string{data: "the data folder", flows: "the workflows folder", ".rel": "the relative folder"})
	for _, tc := range []struct{ name, in, want string }{
		{"run folder", "cannot create run folder " + data + "/runs/hello/2026_abc: not a directory; free some room",
			"cannot create run folder runs/hello/2026_abc: not a directory; free some room"},
		{"folder itself", "open " + data + ": permission denied", "open the data folder: permission denied"},
		{"quoted workflow file", `loading "` + flows + `/a.yaml": line 3`, `loading "a.yaml": line 3`},
		{"file:line", flows + "/a.yaml:3:7: unknown field", "a.yaml:3:7: unknown field"},
		{"another absolute path", "reading /etc/skein/secrets.env: no such file", "reading …/secrets.env: no such file"},
		{"after an equals sign", "file=/var/lib/x/y.db.", "file=…/y.db."},
		{"relative form of a folder", "mkdir .rel/runs/x: exists", "mkdir runs/x: exists"},
		{"relative folder's name is a word", "the .rel folder", "the .rel folder"},
		{"request path kept", "no route POST /some/where/else", "no route POST /some/where/else"},
		{"API route kept", "the hook /hooks/a/b takes POST; GET /api/runs/x", "the hook /hooks/a/b takes POST; GET /api/runs/x"},
		{"single element kept", "GET /healthz", "GET /healthz"},
		{"URL kept", "calling https://example.com/a/b/c failed", "calling https://example.com/a/b/c failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, found := ps.Scrub(tc.in, "/some/where/else")
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.in != tc.want, found)
		})
	}
}
