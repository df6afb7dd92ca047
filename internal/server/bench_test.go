package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/server"
)

const loadFlow = `version: 1
name: load
secrets: [HOOK_SECRET]
nodes:
  - id: hook
    type: trigger.webhook
    auth: {type: hmac, secret: "{{ secrets.HOOK_SECRET }}"}
  - id: shape
    type: set
    values:
      order: "{{ trigger.body.order }}"
      total: "{{ trigger.body.qty * trigger.body.price }}"
  - id: note
    type: template
    text: "order {{ shape.order }}: {{ shape.total }}"
edges:
  - {from: hook, to: shape}
  - {from: shape, to: note}
outputs:
  note: "{{ note.text }}"
`

// BenchmarkHookIntake sends signed deliveries of a 3-node workflow to an
// in-process server over loopback, 64 at a time, and waits until every run
// has ended: the cost of one webhook run from request to recorded end
// (for profiles; scripts/bench-hooks measures the served binary).
func BenchmarkHookIntake(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400)) // as cmd/skein sets it
	dir := b.TempDir()
	flows := filepath.Join(dir, "flows")
	require.NoError(b, os.MkdirAll(flows, 0o755))
	require.NoError(b, os.WriteFile(filepath.Join(flows, "load.yaml"), []byte(loadFlow), 0o644))
	env := func(k string) (string, bool) {
		if k == "SKEIN_SECRET_HOOK_SECRET" {
			return hookSecret, true
		}
		return "", false
	}
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: env, OnDemandFolders: true}) // as skein serve
	require.NoError(b, err)
	defer r.Close()
	srv, err := server.New(server.Config{Runner: r, Workflows: flows, Log: slog.New(slog.DiscardHandler)})
	require.NoError(b, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}}
	wh, err := standardwebhooks.NewWebhook(hookSecret)
	require.NoError(b, err)

	ids := make([]string, b.N)
	work := make(chan int)
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	b.ResetTimer()
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				body := fmt.Sprintf(`{"order": "o-%d", "qty": 3, "price": 2.5}`, i)
				id := "msg_" + strconv.Itoa(i)
				at := time.Now()
				sig, _ := wh.Sign(id, at, []byte(body))
				req, _ := http.NewRequest("POST", base+"/hooks/load/hook", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("webhook-id", id)
				req.Header.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
				req.Header.Set("webhook-signature", sig)
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					b.Errorf("status %d", resp.StatusCode)
				}
				ids[i] = id
			}
		}()
	}
	for i := range b.N {
		work <- i
	}
	close(work)
	wg.Wait()
	// Every run ends: the server's executions stop only when they have.
	cancel()
	<-served
	served <- nil
	b.StopTimer()
	// The process's CPU time (server and client) per run: steadier than
	// the wall time on a machine others share.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
