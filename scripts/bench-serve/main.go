// Command bench-serve measures steps a second of many concurrent runs
// through `skein serve` as a process, with its default flags (SQLite, run
// folders made on demand): the throughput a user of the API gets. Each
// round starts a server on a fresh folder, starts -runs runs of a 10-node
// chain of `set` nodes at once through POST /api/workflows/chain10/runs
// (one keep-alive client, 64 requests in flight), waits until GET
// /api/runs lists them all completed, and reports -runs × 11 steps (the
// trigger and 10 nodes) over the time from the first request to the last
// run's end.
//
//	go run ./scripts/bench-serve [-runs 200] [-rounds 5] [-skein path]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skeinhq/skein/scripts/internal/benchproc"
)

func main() {
	runs := flag.Int("runs", 200, "runs started at once, at most 500")
	rounds := flag.Int("rounds", 5, "rounds; the median is reported")
	skein := flag.String("skein", "", "the skein binary (default: go build ./cmd/skein)")
	flag.Parse()
	if err := bench(context.Background(), *runs, *rounds, *skein); err != nil {
		fmt.Fprintln(os.Stderr, "bench-serve:", err)
		os.Exit(1)
	}
}

func bench(ctx context.Context, runs, rounds int, bin string) error {
	dir, err := os.MkdirTemp(".", "bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dir, _ = filepath.Abs(dir)
	if bin, err = benchproc.Build(bin, dir); err != nil {
		return err
	}
	wf := filepath.Join(dir, "wf")
	if err := os.MkdirAll(wf, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("version: 1\nname: chain10\nnodes:\n  - {id: start, type: trigger.manual}\n")
	for i := range 10 {
		fmt.Fprintf(&b, "  - {id: n%d, type: set, values: {i: %d}}\n", i, i)
	}
	b.WriteString("edges:\n  - {from: start, to: n0}\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  - {from: n%d, to: n%d}\n", i-1, i)
	}
	if err := os.WriteFile(filepath.Join(wf, "chain10.yaml"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("# %d runs of 11 steps, %d rounds, load %s\n", runs, rounds, strings.Join(strings.Fields(string(load))[:3], " "))
	var rates []float64
	for r := range rounds {
		rate, err := round(ctx, bin, filepath.Join(dir, fmt.Sprintf("runs-%d", r)), wf, runs)
		if err != nil {
			return err
		}
		fmt.Printf("round %d: %.0f steps/s\n", r, rate)
		rates = append(rates, rate)
	}
	slices.Sort(rates)
	med := rates[len(rates)/2]
	fmt.Printf("median: %.0f steps/s (target ≥ 20,000: ratio %.2f)\n", med, med/20000)
	return nil
}

// round starts a server, runs the runs and stops it.
func round(ctx context.Context, bin, dir, wf string, runs int) (float64, error) {
	srv, err := benchproc.Serve(ctx, exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--no-auth", "--dir", dir, "--workflows", wf), nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = srv.Stop() }()
	base := srv.URL
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	start := time.Now()
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			resp, err := client.Post(base+"/api/workflows/chain10/runs", "application/json", strings.NewReader(`{}`))
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				errs <- fmt.Errorf("starting a run: %s", resp.Status)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	for {
		resp, err := client.Get(fmt.Sprintf("%s/api/runs?workflow=chain10&status=completed&limit=%d", base, runs))
		if err != nil {
			return 0, err
		}
		var list struct {
			Runs []json.RawMessage `json:"runs"`
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		_ = resp.Body.Close()
		if err != nil {
			return 0, err
		}
		if len(list.Runs) >= runs {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return float64(runs*11) / time.Since(start).Seconds(), nil
}
