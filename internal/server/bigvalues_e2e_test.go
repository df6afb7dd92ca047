package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// bigSetup is a configuration of skein serve the big-value tests run on,
// and where it keeps a value over 64 KiB.
type bigSetup struct {
	s *served
	// kept reads back the blob ref refers to, checking that it lives where
	// the configuration keeps big values.
	kept func(t *testing.T, workflow string, ref map[string]any) []byte
}

// bigSetups are the configurations of skein serve: its defaults (SQLite,
// run folders made on demand), and queued runs on Postgres with a worker,
// whose big values go to the database's blobs table or to a --blobs
// folder.
var bigSetups = []struct {
	name  string
	setup func(t *testing.T) bigSetup
}{
	{"served", func(t *testing.T) bigSetup {
		s := serve(t, serveOpts{flows: copyDir(t, "testdata/bigvalues")})
		return bigSetup{s: s, kept: func(t *testing.T, workflow string, ref map[string]any) []byte {
			rel, _ := ref["path"].(string)
			require.NotEmpty(t, rel, "a served run's reference names its file: %v", ref)
			require.False(t, filepath.IsAbs(rel), "the reference names its file relative to the data folder, not by the server's path: %s", rel)
			path := filepath.Join(s.dir, rel)
			runs := filepath.Join(s.dir, "runs", workflow)
			require.Equal(t, runs, filepath.Dir(filepath.Dir(filepath.Dir(path))), "the blob is in a run folder of %s", workflow)
			require.Equal(t, filepath.Join("blobs", ref["sha256"].(string)), filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path)))
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			return data
		}}
	}},
	{"queued on Postgres", func(t *testing.T) bigSetup {
		db := pgtest.URL(t)
		s := queuedServe(t, db)
		return bigSetup{s: s, kept: func(t *testing.T, _ string, ref map[string]any) []byte {
			require.Equal(t, "postgres", ref["store"], "the reference names the shared store: %v", ref)
			require.NotContains(t, ref, "path")
			ctx := context.Background()
			st, err := postgres.Open(ctx, db)
			require.NoError(t, err)
			defer st.Close()
			rc, err := st.Blobs().Open(ctx, ref["sha256"].(string))
			require.NoError(t, err, "the blob is in the database's blobs table")
			defer rc.Close()
			data, err := io.ReadAll(rc)
			require.NoError(t, err)
			return data
		}}
	}},
	{"queued with --blobs", func(t *testing.T) bigSetup {
		db, dir := pgtest.URL(t), t.TempDir()
		s := queuedServe(t, db, "--blobs", dir)
		return bigSetup{s: s, kept: func(t *testing.T, _ string, ref map[string]any) []byte {
			require.Equal(t, "shared", ref["store"], "the reference names the shared store: %v", ref)
			require.NotContains(t, ref, "path")
			sum := ref["sha256"].(string)
			data, err := os.ReadFile(filepath.Join(dir, sum[:2], sum))
			require.NoError(t, err, "the blob is in the --blobs folder")
			return data
		}}
	}},
}

// queuedServe serves testdata/bigvalues with runs queued on db and one
// worker; more are the flags of both processes.
func queuedServe(t *testing.T, db string, more ...string) *served {
	t.Helper()
	s := serve(t, serveOpts{flows: copyDir(t, "testdata/bigvalues"), args: append([]string{"--db", db, "--queue"}, more...)})
	w := exec.Command(bin, append([]string{"worker", "--db", db, "--dir", t.TempDir()}, more...)...)
	var out bytes.Buffer
	w.Stdout, w.Stderr = &out, &out
	require.NoError(t, w.Start())
	t.Cleanup(func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		require.NoError(t, w.Wait(), "worker:\n%s", out.String())
	})
	return s
}

// ref returns the blob reference v is, failing when it is none.
func ref(t *testing.T, v any) map[string]any {
	t.Helper()
	m, _ := v.(map[string]any)
	r, ok := m["$skein.blob"].(map[string]any)
	require.True(t, ok, "a big value is a blob reference: %.200v", v)
	return r
}

// holdsRef reports whether v holds a blob reference.
func holdsRef(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["$skein.blob"]; ok {
			return true
		}
		for _, e := range x {
			if holdsRef(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsRef(e) {
				return true
			}
		}
	}
	return false
}

// checkBlob checks that ref refers to text whole, kept where setup keeps
// big values, and that the API serves it as the run's
// (GET /api/runs/{id}/blobs/{sha256}).
func (b bigSetup) checkBlob(t *testing.T, doc map[string]any, workflow string, r map[string]any, text string) {
	t.Helper()
	sum := sha256.Sum256([]byte(text))
	require.Equal(t, hex.EncodeToString(sum[:]), r["sha256"])
	require.Equal(t, float64(len(text)), r["size"])
	got := b.kept(t, workflow, r)
	require.Equal(t, len(text), len(got))
	require.True(t, string(got) == text, "the blob holds the value whole")

	a := b.s.do("GET", "/api/runs/"+doc["execution_id"].(string)+"/blobs/"+r["sha256"].(string), b.s.token, nil)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, "text/plain; charset=utf-8", a.header.Get("Content-Type"))
	require.True(t, string(a.body) == text, "the API serves the value whole")
}

// completed waits for run id to end and checks that it completed.
func completed(t *testing.T, s *served, id string) map[string]any {
	t.Helper()
	doc := s.ended(id)
	require.Equal(t, "completed", doc["status"], "run %s: %v\n%s", id, doc["error"], s.log())
	return doc
}

// reportTo makes the helpers of s fail t (a subtest of the test that
// started s, run while that test waits) until the returned func is called.
func (s *served) reportTo(t *testing.T) (restore func()) {
	was := s.t
	s.t = t
	return func() { s.t = was }
}

// TestBigValuesWhereverServed: values over 64 KiB — a node's output, an
// input given to the API, a webhook body, a chat history, a run's
// outputs, a run variable, a child run's outputs, and the output of a
// run resumed after a signal — on skein serve with its defaults (the run
// folder is made when a big value is kept) and on queued runs (the shared
// blob store): every run completes, reads the values whole, and the
// references read back where the configuration keeps big values.
func TestBigValuesWhereverServed(t *testing.T) {
	t.Parallel()
	for _, cfg := range bigSetups {
		t.Run(cfg.name, func(t *testing.T) {
			t.Parallel()
			b := cfg.setup(t)
			s := b.s
			part := func(name string, f func(t *testing.T)) {
				t.Run(name, func(t *testing.T) {
					defer s.reportTo(t)()
					f(t)
				})
			}

			part("output of 100 KB", func(t *testing.T) {
				doc := completed(t, s, s.start("big", nil))
				want := strings.Repeat("x", 100000)
				require.Equal(t, "100000", outputs(doc)["bytes"], "the next node read the output whole")
				b.checkBlob(t, doc, "big", ref(t, step(doc, "big")["output"].(map[string]any)["stdout"]), want)
				b.checkBlob(t, doc, "big", ref(t, outputs(doc)["text"]), want)

				id := doc["execution_id"].(string)
				for _, path := range []string{"/api/runs/" + id, "/api/runs/" + id + "/events"} {
					a := s.do("GET", path, s.token, nil)
					require.Equal(t, http.StatusOK, a.status)
					require.Contains(t, string(a.body), "$skein.blob", "%s holds the references", path)
					require.NotContains(t, string(a.body), s.dir, "%s names no path of the server's", path)
				}
				a := s.do("GET", "/api/runs/"+id+"/blobs/"+strings.Repeat("0", 64), s.token, nil)
				require.Equal(t, http.StatusNotFound, a.status, "a digest the run does not hold: %s", a.body)
				require.Equal(t, http.StatusUnauthorized, s.do("GET", "/api/runs/"+id+"/blobs/"+ref(t, outputs(doc)["text"])["sha256"].(string), "", nil).status)
			})

			part("input of 100 KB", func(t *testing.T) {
				text := strings.Repeat("y", 100000)
				doc := completed(t, s, s.start("bigin", map[string]any{"text": text}))
				require.Equal(t, map[string]any{"bytes": "100000", "kept": "100000", "same": true}, outputs(doc),
					"the input, a node's output and a run variable hold it whole")
				b.checkBlob(t, doc, "bigin", ref(t, step(doc, "keep")["output"].(map[string]any)["text"]), text)
				require.True(t, holdsRef(step(doc, "start")["output"]), "the trigger's output holds the input as a blob")
			})

			pad := strings.Repeat("z", 200000)
			body, err := json.Marshal(map[string]any{"n": 7, "pad": pad})
			require.NoError(t, err)
			part("webhook body of 200 KB", func(t *testing.T) {
				a := s.do("POST", "/hooks/bigbody/hook", "", string(body), "Content-Type", "application/json")
				require.Equal(t, http.StatusAccepted, a.status, string(a.body))
				doc := completed(t, s, a.json(t)["execution_id"].(string))
				require.Equal(t, map[string]any{"n": 7.0, "size": "200000"}, outputs(doc))
				b.checkBlob(t, doc, "bigbody", ref(t, step(doc, "read")["output"].(map[string]any)["pad"]), pad)
				require.True(t, holdsRef(step(doc, "hook")["output"]), "the trigger's output holds the body as a blob: %.300v", step(doc, "hook")["output"])
			})

			part("webhook body of 200 KB as trigger.body", func(t *testing.T) {
				a := s.do("POST", "/hooks/bighook/hook", "", string(body), "Content-Type", "application/json")
				require.Equal(t, http.StatusAccepted, a.status, string(a.body))
				doc := completed(t, s, a.json(t)["execution_id"].(string))
				require.Equal(t, map[string]any{"n": 7.0, "size": 200000.0}, outputs(doc))
			})

			part("chat history over 64 KiB", func(t *testing.T) {
				conv, history := "c-big", 0
				for turn := 1; turn <= 5; turn++ {
					msg := fmt.Sprintf("%d", turn) + strings.Repeat("m", 19999)
					ans := s.admin("POST", "/api/chat/bigchat", map[string]any{"message": msg, "conversation": conv}, http.StatusOK)
					require.Equal(t, float64(turn), ans["turn"])
					require.Equal(t, "completed", ans["status"], "turn %d (history of %d bytes): %v", turn, history, ans["error"])
					doc := s.admin("GET", "/api/runs/"+ans["execution_id"].(string), nil, http.StatusOK)
					out := outputs(doc)
					require.Equal(t, float64(2*(turn-1)), out["messages"], "turn %d", turn)
					require.Equal(t, float64(history), out["history_bytes"], "turn %d reads its history whole", turn)
					require.Equal(t, history > 64<<10, holdsRef(step(doc, "chat")["output"]), "turn %d: the trigger's output holds a history over 64 KiB as a blob", turn)
					history += len(msg) + len("you said ") + len(msg)
				}
				require.Greater(t, history, 64<<10)

				// A reply over 64 KiB is in the next turn's history as its text.
				msg := strings.Repeat("r", 70000)
				ans := s.admin("POST", "/api/chat/bigchat", map[string]any{"message": msg, "conversation": "c-long"}, http.StatusOK)
				require.Equal(t, "completed", ans["status"], "%v", ans["error"])
				require.Equal(t, "you said "+msg, ans["reply"], "the answer holds the reply whole")
				replied := s.admin("GET", "/api/runs/"+ans["execution_id"].(string), nil, http.StatusOK)
				b.checkBlob(t, replied, "bigchat", ref(t, outputs(replied)["reply"]), "you said "+msg)
				ans = s.admin("POST", "/api/chat/bigchat", map[string]any{"message": "and?", "conversation": "c-long"}, http.StatusOK)
				require.Equal(t, "completed", ans["status"], "%v", ans["error"])
				doc := s.admin("GET", "/api/runs/"+ans["execution_id"].(string), nil, http.StatusOK)
				b.checkBlob(t, doc, "bigchat", ref(t, outputs(doc)["last"]), "you said "+msg)
			})

			part("child run of a subworkflow", func(t *testing.T) {
				id := s.start("bigparent", nil)
				doc := completed(t, s, id)
				require.Equal(t, map[string]any{"child_bytes": "100000", "bytes": "100000"}, outputs(doc))
				want := strings.Repeat("x", 100000)
				b.checkBlob(t, doc, "bigparent", ref(t, step(doc, "child")["output"].(map[string]any)["text"]), want)
				child := s.admin("GET", "/api/runs/"+id+".child1", nil, http.StatusOK)
				require.Equal(t, "completed", child["status"])
				b.checkBlob(t, child, "big", ref(t, step(child, "big")["output"].(map[string]any)["stdout"]), want)
			})

			part("resumed after a signal", func(t *testing.T) {
				id := s.start("bigwait", nil)
				s.until(id, "the wait", func(doc map[string]any) bool {
					st := step(doc, "approve")
					return st != nil && st["status"] == "waiting"
				})
				s.admin("POST", "/api/runs/"+id+"/signals/approve", map[string]any{"by": "Ada"}, http.StatusAccepted)
				doc := completed(t, s, id)
				require.Equal(t, "100000", outputs(doc)["bytes"])
				b.checkBlob(t, doc, "bigwait", ref(t, step(doc, "big")["output"].(map[string]any)["stdout"]), strings.Repeat("w", 100000))
			})
		})
	}
}
