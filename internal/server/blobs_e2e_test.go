package server_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// pictureDigest is the SHA-256 of the image testdata/picture.js returns.
const pictureDigest = "21981058fd894625b82410eb7c70fb37a58716f6e29ee022a1732313354971b9"

const handOffFlow = `version: 1
name: handoff
mcp_servers:
  pics: {command: node, args: [%q]}
nodes:
  - {id: start, type: trigger.manual}
  - {id: shoot, type: mcp, server: pics, tool: shot, queue: a}
  - {id: big, type: shell, queue: a, command: [sh, -c, "head -c 200000 /dev/zero | tr '\\0' x"]}
  - {id: count, type: shell, queue: b, command: [wc, -c], stdin: "{{ big.stdout }}"}
edges:
  - {from: start, to: shoot}
  - {from: shoot, to: big}
  - {from: big, to: count}
outputs:
  bytes: "{{ trim(count.stdout) }}"
`

// TestBlobsAcrossWorkers: with skein serve --queue and two worker
// processes on one Postgres, a node on worker A outputs 200,000 bytes and
// another saves an image; the node on worker B gets the whole output, and
// the server shows the big output and serves the image — through the
// database's blob table, or through a folder every process is given with
// --blobs.
func TestBlobsAcrossWorkers(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not in PATH: the test's MCP server is a node script")
		}
		t.Skip("node is not in PATH")
	}
	picture, err := filepath.Abs("testdata/picture.js")
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		blobs func(t *testing.T) []string // the flags of every process
		store string
	}{
		{name: "Postgres", store: "postgres", blobs: func(*testing.T) []string { return nil }},
		{name: "SharedFolder", store: "shared", blobs: func(t *testing.T) []string { return []string{"--blobs", "file://" + t.TempDir()} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := pgtest.URL(t)
			blobs := tc.blobs(t)
			flows := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(flows, "handoff.yaml"), []byte(fmt.Sprintf(handOffFlow, picture)), 0o644))
			s := serve(t, serveOpts{flows: flows, args: append([]string{"--db", db, "--queue"}, blobs...)})
			for _, q := range []string{"a", "b"} {
				w := exec.Command(bin, append([]string{"worker", "--db", db, "--queues", q, "--dir", t.TempDir()}, blobs...)...)
				var out bytes.Buffer
				w.Stdout, w.Stderr = &out, &out
				require.NoError(t, w.Start())
				t.Cleanup(func() {
					_ = w.Process.Signal(syscall.SIGTERM)
					require.NoError(t, w.Wait(), "worker %s:\n%s", q, out.String())
				})
			}

			id := s.start("handoff", nil)
			doc := s.ended(id)
			require.Equal(t, "completed", doc["status"], "%v", doc["error"])
			require.Equal(t, "200000", doc["outputs"].(map[string]any)["bytes"], "worker B read the whole output of worker A")

			steps := map[string]map[string]any{}
			for _, st := range doc["steps"].([]any) {
				steps[st.(map[string]any)["node"].(string)] = st.(map[string]any)
			}
			ref := steps["big"]["output"].(map[string]any)["stdout"].(map[string]any)["$skein.blob"].(map[string]any)
			sum := sha256.Sum256([]byte(strings.Repeat("x", 200000)))
			require.Equal(t, map[string]any{"sha256": hex.EncodeToString(sum[:]), "size": 200000.0, "type": "text", "store": tc.store}, ref,
				"the step refers to the blob by store and digest, not by a path of worker A")

			arts := steps["shoot"]["artifacts"].([]any)
			require.Len(t, arts, 1)
			require.Equal(t, map[string]any{"name": "shot-1.png", "size": 100070.0, "sha256": pictureDigest}, arts[0])
			images := steps["shoot"]["output"].(map[string]any)["images"].([]any)
			require.Equal(t, "shot-1.png", images[0].(map[string]any)["path"], "the output names the artifact")

			a := s.do("GET", "/api/runs/"+id+"/artifacts/shoot/shot-1.png", s.token, nil)
			require.Equal(t, http.StatusOK, a.status, string(a.body))
			require.Equal(t, "image/png", a.header.Get("Content-Type"))
			got := sha256.Sum256(a.body)
			require.Equal(t, pictureDigest, hex.EncodeToString(got[:]), "the server serves the image worker A saved")

			missing := s.do("GET", "/api/runs/"+id+"/artifacts/shoot/nothing.png", s.token, nil)
			require.Equal(t, http.StatusNotFound, missing.status, string(missing.body))

			show, err := exec.Command(bin, append([]string{"runs", "show", id, "--db", db, "--dir", t.TempDir()}, blobs...)...).CombinedOutput()
			require.NoError(t, err, string(show))
			require.Contains(t, string(show), "shoot/shot-1.png")
		})
	}
}
