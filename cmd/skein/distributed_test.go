package main_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// examplesThatNeedNothing are the examples whose `# needs:` header says
// nothing (approval.yaml waits for a signal: TestQueuedApproval).
func examplesThatNeedNothing(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../examples/*.yaml")
	require.NoError(t, err)
	var out []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(string(src), "\n# needs: nothing\n") || strings.HasPrefix(string(src), "# needs: nothing\n") {
			out = append(out, f)
		}
	}
	require.GreaterOrEqual(t, len(out), 10, "the examples that need nothing")
	return out
}

// serveProcess starts `skein serve` with args on a free loopback port and
// returns its URL; it is stopped with SIGTERM when the test ends.
func serveProcess(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--no-auth"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = io.Discard
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var line struct{ Msg, URL string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return line.URL
		}
	}
	t.Fatalf("skein serve did not say where it listens")
	return ""
}

// TestExamplesOnServeAndTwoWorkers is the README's distributed set-up: one
// Postgres, `skein serve --queue` and two `skein worker`s. Every example
// that needs nothing, started through the server's API, runs on the
// workers unchanged: same status and outputs as a local `skein run`.
func TestExamplesOnServeAndTwoWorkers(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	mig := run(t, "migrate", "--db", db)
	require.Equal(t, 0, mig.code, mig.stderr)
	worker(t, db, "--concurrency", "4")
	worker(t, db, "--concurrency", "4")
	base := serveProcess(t, "--db", db, "--queue", "--dir", t.TempDir(), "--workflows", "../../examples")
	nameRe := regexp.MustCompile(`(?m)^name: (\S+)`)
	for _, file := range examplesThatNeedNothing(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			name := nameRe.FindStringSubmatch(string(src))[1]

			local := run(t, "run", "--dir", t.TempDir(), "--output", "json", file)
			var want struct {
				Status  string         `json:"status"`
				Outputs map[string]any `json:"outputs"`
			}
			require.NoError(t, json.Unmarshal([]byte(local.stdout), &want), local.stdout+local.stderr)

			resp, err := http.Post(base+"/api/workflows/"+name+"/runs", "application/json", strings.NewReader(`{}`))
			require.NoError(t, err)
			var started struct {
				ID string `json:"execution_id"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&started))
			_ = resp.Body.Close()
			require.Equal(t, http.StatusAccepted, resp.StatusCode)
			var got struct {
				Status  string         `json:"status"`
				Outputs map[string]any `json:"outputs"`
			}
			eventually(t, 60*time.Second, func() bool {
				resp, err := http.Get(base + "/api/runs/" + started.ID)
				require.NoError(t, err)
				defer resp.Body.Close()
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
				return got.Status == "completed" || got.Status == "failed" || got.Status == "cancelled"
			}, "run %s of %s did not end on the workers", started.ID, name)
			require.Equal(t, want.Status, got.Status)
			require.Equal(t, want.Outputs, got.Outputs)
			if name == "checks" {
				// The server that started it runs its checks when it
				// ends; the runs list shows the verdict.
				eventually(t, 30*time.Second, func() bool {
					resp, err := http.Get(base + "/api/runs?workflow=checks")
					require.NoError(t, err)
					defer resp.Body.Close()
					var list struct {
						Runs []struct {
							ID      string `json:"execution_id"`
							Verdict string `json:"verdict"`
						} `json:"runs"`
					}
					require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
					for _, r := range list.Runs {
						if r.ID == started.ID {
							return r.Verdict == "PASSED"
						}
					}
					return false
				}, "the runs list did not show the queued run's verdict")
			}
		})
	}
}
