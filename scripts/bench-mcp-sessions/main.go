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
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/skeinhq/skein/scripts/internal/benchproc"
)

func main() {
	sessions := flag.Int("sessions", 3000, "sessions to open")
	skein := flag.String("skein", "", "the skein binary (default: go build ./cmd/skein)")
	flag.Parse()
	if err := bench(context.Background(), *sessions, *skein); err != nil {
		fmt.Fprintln(os.Stderr, "bench-mcp-sessions:", err)
		os.Exit(1)
	}
}

func bench(ctx context.Context, sessions int, bin string) error {
	dir, err := os.MkdirTemp(".", "bench-mcp-sessions-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dir, _ = filepath.Abs(dir)
	if bin, err = benchproc.Build(bin, dir); err != nil {
		return err
	}
	cmd := exec.Command(bin, "mcp", "--http", "127.0.0.1:0", "--dir", dir)
	cmd.Dir = dir
	srv, err := benchproc.MCP(ctx, cmd, nil)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()
	url := srv.URL

	pid := srv.Pid()
	before, _, err := benchproc.RSS(pid)
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
	after, peak, err := benchproc.RSS(pid)
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

func mb(b int64) float64 { return float64(b) / 1e6 }
