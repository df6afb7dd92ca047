// Command bench-mcp-sessions measures the memory of `skein mcp --http` as a
// process while one loopback client opens many sessions. It starts the
// server with its default flags on a fresh folder, opens -sessions
// sessions one after the other (an initialize and its
// notifications/initialized each, as a client does; none is closed), and
// prints the server's resident set (VmRSS, and the peak VmHWM, from
// /proc; Linux only) before and after, and how many of the sessions still
// answer a ping.
//
//	go run ./scripts/bench-mcp-sessions [-sessions 3000] [-skein path]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	sessions := flag.Int("sessions", 3000, "sessions to open")
	skein := flag.String("skein", "", "the skein binary (default: go build ./cmd/skein)")
	flag.Parse()
	if err := bench(*sessions, *skein); err != nil {
		fmt.Fprintln(os.Stderr, "bench-mcp-sessions:", err)
		os.Exit(1)
	}
}

func bench(sessions int, bin string) error {
	dir, err := os.MkdirTemp(".", "bench-mcp-sessions-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dir, _ = filepath.Abs(dir)
	if bin == "" {
		bin = filepath.Join(dir, "skein")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/skein").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	cmd := exec.Command(bin, "mcp", "--http", "127.0.0.1:0", "--dir", dir)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading the server's first line: %w", err)
	}
	_, url, ok := strings.Cut(strings.TrimSpace(line), "listening on ")
	if !ok {
		return fmt.Errorf("the server said %q", line)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	pid := cmd.Process.Pid
	before, _, err := rss(pid)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: time.Minute}
	ids := make([]string, 0, sessions)
	begin := time.Now()
	for range sessions {
		resp, err := post(client, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
		if err != nil {
			return err
		}
		id := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || id == "" {
			return fmt.Errorf("initialize: %s", resp.Status)
		}
		if _, err := post(client, url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
			return err
		}
		ids = append(ids, id)
	}
	took := time.Since(begin)
	after, peak, err := rss(pid)
	if err != nil {
		return err
	}
	live := 0
	for _, id := range ids {
		resp, err := post(client, url, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusOK {
			live++
		}
	}
	fmt.Printf("%d sessions opened in %s; RSS before %.1f MB, after %.1f MB (+%.1f MB), peak %.1f MB; %d still answer\n",
		sessions, took.Round(time.Millisecond), mb(before), mb(after), mb(after-before), mb(peak), live)
	return nil
}

// post sends one JSON-RPC message, on the session id when it is not
// empty, and reads the whole answer.
func post(client *http.Client, url, id, msg string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp, err
}

// rss is the process's resident set and its peak, in bytes.
func rss(pid int) (now, peak int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			now = kb << 10
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			peak = kb << 10
		}
	}
	return now, peak, nil
}

func mb(b int64) float64 { return float64(b) / 1e6 }
