package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// TestWebhookLoadOnPostgres: 2,000 webhook deliveries from 50 concurrent
// loopback clients against skein serve on Postgres (the queue) with two
// skein worker processes: every delivery answered 202 started exactly
// one run, with the id the answer gave, and every such run completes. A
// delivery not accepted is refused as busy (503), never lost or doubled.
func TestWebhookLoadOnPostgres(t *testing.T) {
	t.Parallel()
	const deliveries, clients = 2000, 50
	db := pgtest.URL(t)
	flows := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(flows, "hooked.yaml"), []byte(`version: 1
name: hooked
nodes:
  - {id: hook, type: trigger.webhook, path: hook, auth: {type: none}}
  - {id: read, type: set, values: {n: "{{ hook.body.n }}"}}
edges:
  - {from: hook, to: read}
outputs:
  n: "{{ read.n }}"
`), 0o644))
	s := serve(t, serveOpts{flows: flows, args: []string{"--db", db, "--queue"}})
	for range 2 {
		w := exec.Command(bin, "worker", "--db", db, "--dir", t.TempDir())
		var out bytes.Buffer
		w.Stdout, w.Stderr = &out, &out
		require.NoError(t, w.Start())
		t.Cleanup(func() {
			_ = w.Process.Signal(syscall.SIGTERM)
			require.NoError(t, w.Wait(), "the worker exits 0 when it drained:\n%s", out.String())
		})
	}

	began := time.Now()
	var (
		mu       sync.Mutex
		accepted = map[string]int{} // run id → the delivery n that started it
		refused  = map[int]int{}    // status → count
	)
	next := make(chan int)
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for range clients {
		wg.Go(func() {
			for n := range next {
				resp, err := client.Post(s.url+"/hooks/hooked/hook", "application/json", bytes.NewReader(fmt.Appendf(nil, `{"n": %d}`, n)))
				if !assertNoError(t, err, "delivery %d", n) {
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				mu.Lock()
				if resp.StatusCode == http.StatusAccepted {
					var doc struct {
						ID string `json:"execution_id"`
					}
					if assertNoError(t, json.Unmarshal(body, &doc), "delivery %d: %s", n, body) {
						_, twice := accepted[doc.ID]
						if twice {
							t.Errorf("delivery %d was answered with the run id %s of delivery %d", n, doc.ID, accepted[doc.ID])
						}
						accepted[doc.ID] = n
					}
				} else {
					refused[resp.StatusCode]++
				}
				mu.Unlock()
			}
		})
	}
	for n := range deliveries {
		next <- n
	}
	close(next)
	wg.Wait()
	sent := time.Since(began)
	for status := range refused {
		require.Equal(t, http.StatusServiceUnavailable, status, "a delivery that is not accepted is refused as busy: %v", refused)
	}
	require.NotEmpty(t, accepted)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	require.Eventually(t, func() bool {
		var open int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM runs WHERE status NOT IN ('completed', 'failed', 'cancelled')`).Scan(&open)
		return err == nil && open == 0
	}, 5*time.Minute, 100*time.Millisecond, "the accepted runs did not all end") // a safety net only
	done := time.Since(began)

	rows, err := conn.Query(ctx, `SELECT id, status, outputs FROM runs WHERE workflow = 'hooked'`)
	require.NoError(t, err)
	type run struct {
		status  string
		outputs map[string]any
	}
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
		id string
		run
	}, error) {
		var x struct {
			id string
			run
		}
		err := r.Scan(&x.id, &x.status, &x.outputs)
		return x, err
	})
	require.NoError(t, err)
	require.Len(t, runs, len(accepted), "one run per accepted delivery")
	for _, r := range runs {
		n, ok := accepted[r.id]
		require.True(t, ok, "run %s was started by no accepted delivery", r.id)
		require.Equal(t, "completed", r.status, "run %s", r.id)
		require.EqualValues(t, n, r.outputs["n"], "run %s has the body of the delivery that started it", r.id)
	}
	t.Logf("%d deliveries from %d clients: %d accepted, refused %v; sent in %s, every run ended %s after the first",
		deliveries, clients, len(accepted), refused, sent.Round(time.Millisecond), done.Round(time.Millisecond))
}

// assertNoError reports err without stopping a client goroutine.
func assertNoError(t *testing.T, err error, format string, args ...any) bool {
	t.Helper()
	if err != nil {
		t.Errorf(format+": %v", append(args, err)...)
		return false
	}
	return true
}
