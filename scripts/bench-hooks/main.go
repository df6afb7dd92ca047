// Command bench-hooks measures webhook intake of `skein serve` on loopback:
// it serves a 3-node workflow (a trigger.webhook with Standard Webhooks
// HMAC, a set node, a template node), sends signed deliveries at a fixed
// rate for a fixed time (open loop: each request is due at its own time,
// and its latency counts from then, so a stalled server cannot hide its
// queue), then waits until every accepted run has ended and checks that
// each one completed and is recorded. It samples the server's RSS every
// second.
//
//	go run ./scripts/bench-hooks [-rate 2000] [-duration 30s] [-skein path]
//	go run ./scripts/bench-hooks -db postgres://postgres@127.0.0.1:5432/test?sslmode=disable -workers 2
//
// With -db the server keeps its runs in a new schema of that Postgres
// database (dropped at the end) and hands their nodes to -workers `skein
// worker` processes; the server's CPU per request is then the intake's
// alone. With -workers 0 no node runs: the runs stay queued, and the
// figures are the intake's (the run listing checks each was recorded).
// -worker-concurrency and -worker-nice run the workers with fewer slots
// or a lower priority, for a server and workers that share the cores.
//
// The figures go to stdout; the server's logs to <dir>/serve.log.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/skeinhq/skein/scripts/internal/benchproc"
)

const flow = `version: 1
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

func main() {
	rate := flag.Int("rate", 2000, "requests per second")
	duration := flag.Duration("duration", 30*time.Second, "how long to send")
	skein := flag.String("skein", "", "the skein binary (default: go build ./cmd/skein)")
	dir := flag.String("dir", "", "working folder (default: a new one under ./tmp)")
	conns := flag.Int("conns", 64, "most connections to the server")
	extra := flag.String("serve-args", "", "more arguments of skein serve, space-separated")
	db := flag.String("db", "", "a Postgres URL: keep the runs in a new schema of this database, run the nodes on -workers skein worker processes")
	workers := flag.Int("workers", 2, "with -db: how many skein worker processes")
	var wk workerOpts
	flag.IntVar(&wk.nice, "worker-nice", 0, "with -db: run the workers under nice -n N (a server and its workers sharing a host's cores)")
	flag.IntVar(&wk.concurrency, "worker-concurrency", 0, "with -db: each worker's --concurrency (0: skein worker's default)")
	flag.Parse()
	if wk.concurrency < 0 {
		fmt.Fprintln(os.Stderr, "bench-hooks: -worker-concurrency must be 0 (the worker's default) or more")
		os.Exit(2)
	}
	if err := run(*rate, *duration, *skein, *dir, *conns, strings.Fields(*extra), *db, *workers, wk); err != nil {
		fmt.Fprintln(os.Stderr, "bench-hooks:", err)
		os.Exit(1)
	}
}

// workerOpts is how the -workers skein worker processes run.
type workerOpts struct {
	nice        int // under nice -n nice, when not 0
	concurrency int // with --concurrency, when not 0
}

func run(rate int, duration time.Duration, skein, dir string, conns int, extra []string, db string, workers int, wk workerOpts) error {
	var workerPids []int
	if dir == "" {
		if err := os.MkdirAll("tmp", 0o755); err != nil {
			return err
		}
		d, err := os.MkdirTemp("tmp", "bench-hooks-")
		if err != nil {
			return err
		}
		dir = d
	}
	dir, _ = filepath.Abs(dir)
	skein, err := benchproc.Build(skein, dir)
	if err != nil {
		return err
	}
	flows := filepath.Join(dir, "flows")
	if err := os.MkdirAll(flows, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(flows, "load.yaml"), []byte(flow), 0o644); err != nil {
		return err
	}
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("bench secret, thirty-two bytes!!"))
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}

	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	env := append(os.Environ(), "SKEIN_SECRET_HOOK_SECRET="+secret, "HOOK_SECRET="+secret)
	ctx, cancel := context.WithTimeoutCause(context.Background(), 30*time.Second, errors.New("not within 30 s"))
	defer cancel()
	args := []string{"serve", "--addr", "127.0.0.1:0", "--dir", filepath.Join(dir, ".skein"), "--workflows", flows}
	if db != "" {
		url, drop, err := schema(ctx, db)
		if err != nil {
			return err
		}
		defer drop()
		env = append(env, "SKEIN_DB="+url)
		if out, err := exec.Command(skein, "migrate", "--db", url).CombinedOutput(); err != nil {
			return fmt.Errorf("skein migrate: %w: %s", err, out)
		}
		for i := range workers {
			wlog, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker%d.log", i+1)))
			if err != nil {
				return err
			}
			defer wlog.Close()
			w := exec.Command(skein, "worker", "--dir", filepath.Join(dir, fmt.Sprintf(".worker%d", i+1)))
			if wk.concurrency != 0 {
				w.Args = append(w.Args, "--concurrency", strconv.Itoa(wk.concurrency))
			}
			if wk.nice != 0 {
				w = exec.Command("nice", append([]string{"-n", strconv.Itoa(wk.nice)}, w.Args...)...)
			}
			// SKEIN_CPUPROFILE profiles the server alone;
			// SKEIN_WORKER_CPUPROFILE=path profiles each worker, to path-1, path-2, ….
			w.Env = slices.DeleteFunc(slices.Clone(env), func(v string) bool { return strings.HasPrefix(v, "SKEIN_CPUPROFILE=") })
			if p := os.Getenv("SKEIN_WORKER_CPUPROFILE"); p != "" {
				w.Env = append(w.Env, fmt.Sprintf("SKEIN_CPUPROFILE=%s-%d", p, i+1))
			}
			w.Stdout, w.Stderr = wlog, wlog
			if err := w.Start(); err != nil {
				return err
			}
			workerPids = append(workerPids, w.Process.Pid)
			defer func() {
				_ = w.Process.Signal(syscall.SIGTERM)
				_ = w.Wait()
			}()
		}
	}
	args = append(args, extra...)
	cmd := exec.Command(skein, args...)
	cmd.Env = env
	// The server's stderr is copied to the log, not parsed: the client's
	// CPU is measured.
	srv, err := benchproc.Serve(ctx, cmd, logFile)
	if err != nil {
		return fmt.Errorf("%w; see %s", err, logFile.Name())
	}
	defer func() { _ = srv.Stop() }()
	base := srv.URL
	token, err := os.ReadFile(filepath.Join(dir, ".skein", "admin.token"))
	if err != nil {
		return err
	}
	tok := strings.TrimSpace(string(token))

	client := &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     time.Minute,
	}, Timeout: 30 * time.Second}

	// RSS of the server in bytes, every second.
	var rssMu sync.Mutex
	var rss []int64
	stopRSS := make(chan struct{})
	rssDone := make(chan struct{})
	go func() {
		defer close(rssDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if b, _, err := benchproc.RSS(srv.Pid()); err == nil {
				rssMu.Lock()
				rss = append(rss, b)
				rssMu.Unlock()
			}
			select {
			case <-stopRSS:
				return
			case <-t.C:
			}
		}
	}()

	fmt.Printf("# %d CPUs, %s/%s, %s for %s at %d/s, %d connections\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, skein, duration, rate, conns)
	if db != "" {
		conc := "the default"
		if wk.concurrency != 0 {
			conc = strconv.Itoa(wk.concurrency)
		}
		fmt.Printf("# Postgres (%s), %d skein worker processes (nice %d, --concurrency %s)\n", db, workers, wk.nice, conc)
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("# load average before: %s", load)
	}
	if line, err := benchproc.State(); err == nil {
		fmt.Printf("# %s\n", line)
	}
	serverCPU0, _ := benchproc.CPU(srv.Pid())
	workersCPU0 := cpuOf(workerPids)
	clientCPU0 := selfCPU()
	total := int(duration.Seconds() * float64(rate))
	lat := make([]time.Duration, total)
	status := make([]int, total)
	ids := make([]string, total)
	var inflight, maxInflight atomic.Int64
	var wg sync.WaitGroup
	begin := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := range total {
		due := begin.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d) // the load generator's clock: requests are due at fixed times
		}
		wg.Add(1)
		n := inflight.Add(1)
		for {
			m := maxInflight.Load()
			if n <= m || maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		go func() {
			defer wg.Done()
			defer inflight.Add(-1)
			body := fmt.Sprintf(`{"order": "o-%d", "qty": %d, "price": 2.5}`, i, i%7+1)
			msgID := "msg_" + strconv.Itoa(i)
			at := time.Now()
			sig, _ := wh.Sign(msgID, at, []byte(body))
			req, _ := http.NewRequest("POST", base+"/hooks/load/hook", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("webhook-id", msgID)
			req.Header.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
			req.Header.Set("webhook-signature", sig)
			resp, err := client.Do(req)
			lat[i] = time.Since(due)
			if err != nil {
				status[i] = -1
				return
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			status[i] = resp.StatusCode
			if resp.StatusCode == http.StatusAccepted {
				var acc struct {
					ExecutionID string `json:"execution_id"`
				}
				_ = json.Unmarshal(data, &acc)
				ids[i] = acc.ExecutionID
			}
		}()
	}
	sent := time.Since(begin)
	wg.Wait()
	answered := time.Since(begin)
	// The server's CPU up to its last answer: the intake's. The listings
	// that follow, which wait for the runs to end, are not counted.
	serverCPU1, _ := benchproc.CPU(srv.Pid())

	// Every accepted run ends and is recorded completed.
	accepted := map[string]bool{}
	for _, id := range ids {
		if id != "" {
			accepted[id] = true
		}
	}
	drainStart := time.Now()
	var final map[string]string
	for {
		final, err = listRuns(client, base, tok)
		if err != nil {
			return err
		}
		live := 0
		for id := range accepted {
			if s := final[id]; s == "" || s == "running" || s == "pending" {
				live++
			}
		}
		if live == 0 || (db != "" && workers == 0) {
			break
		}
		if time.Since(drainStart) > 5*time.Minute {
			return fmt.Errorf("%d runs still running 5 minutes after the load", live)
		}
		time.Sleep(250 * time.Millisecond) // polling another process
	}
	drained := time.Since(drainStart)
	// The workers' CPU up to the last run's end: the runs'.
	workersCPU := cpuOf(workerPids) - workersCPU0
	close(stopRSS)
	<-rssDone
	clientCPU := selfCPU() - clientCPU0

	counts := map[int]int{}
	var ok []time.Duration
	for i, s := range status {
		counts[s]++
		if s == http.StatusAccepted {
			ok = append(ok, lat[i])
		}
	}
	slices.Sort(ok)
	pct := func(p float64) time.Duration {
		if len(ok) == 0 {
			return 0
		}
		return ok[min(len(ok)-1, int(p*float64(len(ok))))]
	}
	byStatus := map[string]int{}
	for id := range accepted {
		byStatus[final[id]]++
	}
	fmt.Printf("requests: %d sent in %.1f s (%.0f/s offered), all answered after %.1f s; most in flight %d\n",
		total, sent.Seconds(), float64(total)/sent.Seconds(), answered.Seconds(), maxInflight.Load())
	fmt.Printf("answers: %v\n", counts)
	fmt.Printf("accepted: %d (%.0f/s over the sending time)\n", len(ok), float64(len(ok))/sent.Seconds())
	fmt.Printf("latency of the 202s (from when each was due): p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
		ms(pct(0.5)), ms(pct(0.9)), ms(pct(0.99)), ms(pct(0.999)), ms(pct(1)))
	// The same after the first second: what a server that has been up
	// answers, without its first requests (its connections to the
	// database made, the workflow's version saved).
	var later []time.Duration
	for i, s := range status {
		if s == http.StatusAccepted && i >= rate {
			later = append(later, lat[i])
		}
	}
	slices.Sort(later)
	if len(later) > 0 {
		at := func(p float64) time.Duration { return later[min(len(later)-1, int(p*float64(len(later))))] }
		fmt.Printf("the same, due after the first second: p50 %s  p90 %s  p99 %s  max %s\n", ms(at(0.5)), ms(at(0.9)), ms(at(0.99)), ms(at(1)))
	}
	// The first second by tenths: how long the server takes to answer as
	// it does later.
	fmt.Printf("the first second by tenths, max:")
	for k := range 10 {
		var worst time.Duration
		for i := k * rate / 10; i < (k+1)*rate/10 && i < len(status); i++ {
			if status[i] == http.StatusAccepted {
				worst = max(worst, lat[i])
			}
		}
		fmt.Printf(" %s", ms(worst))
	}
	fmt.Println()
	fmt.Printf("runs of the accepted deliveries, as recorded: %v; last one ended %.1f s after the last answer; %d runs in the store\n",
		byStatus, drained.Seconds(), len(final))
	if len(workerPids) > 0 && len(accepted) > 0 {
		// Within the 250 ms the polling above takes to see the last end.
		fmt.Printf("the workers drained %.0f runs a second (the accepted runs over the time from the first request to the last run's end)\n",
			float64(len(accepted))/(answered+drained).Seconds())
	}
	if n := len(accepted); n > 0 {
		perRun := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
		fmt.Printf("CPU per accepted request: server %.0f µs, this client %.0f µs", perRun(serverCPU1-serverCPU0), perRun(clientCPU))
		if len(workerPids) > 0 {
			fmt.Printf(", the workers %.0f µs (up to the last run's end)", perRun(workersCPU))
		}
		fmt.Println()
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("# load average after: %s", load)
	}
	rssMu.Lock()
	defer rssMu.Unlock()
	if len(rss) > 0 {
		fmt.Printf("server RSS (MiB, one sample a second): start %.0f", mib(rss[0]))
		for i, b := range rss {
			if i > 0 && i%5 == 0 {
				fmt.Printf("  t=%ds %.0f", i, mib(b))
			}
		}
		fmt.Printf("  end %.0f  max %.0f\n", mib(rss[len(rss)-1]), mib(slices.Max(rss)))
	}
	return nil
}

// listRuns returns the status of every run of workflow load.
func listRuns(c *http.Client, base, token string) (map[string]string, error) {
	out := map[string]string{}
	cursor := ""
	for {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", base+"/api/runs?workflow=load&limit=500&cursor="+cursor, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		var page struct {
			Runs []struct {
				ID     string `json:"execution_id"`
				Status string `json:"status"`
			} `json:"runs"`
			Next string `json:"next"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		for _, r := range page.Runs {
			out[r.ID] = r.Status
		}
		if page.Next == "" {
			return out, nil
		}
		cursor = page.Next
	}
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

// schema makes a new schema in the database of url and returns a URL of
// it (its search_path) and how to drop it.
func schema(ctx context.Context, url string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("bench_hooks_%d", os.Getpid())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		_ = conn.Close(ctx)
		return "", nil, err
	}
	drop := func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+name+" CASCADE")
		_ = conn.Close(context.Background())
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + name, drop, nil
}

// cpuOf is the CPU time the processes pids spent so far, summed; a process
// that is gone counts nothing.
func cpuOf(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		if d, err := benchproc.CPU(pid); err == nil {
			sum += d
		}
	}
	return sum
}
