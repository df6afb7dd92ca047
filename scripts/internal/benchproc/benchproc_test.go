package benchproc_test

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/proc/proctest"
	"github.com/skeinhq/skein/scripts/internal/benchproc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tagEnv marks the processes a test starts, so that it can look for them
// once they should be gone.
const tagEnv = "SKEIN_BENCHPROC_TEST"

// TestServers starts `skein serve` and `skein mcp --http` built from this
// tree, asks each where it said it listens, and stops it: no process is
// left, and its stderr is all in the log.
func TestServers(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bin, err := benchproc.Build("", t.TempDir())
	require.NoError(t, err)
	exe, err := elf.Open(bin)
	require.NoError(t, err)
	for _, p := range exe.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "the binary is static, as make install builds it")
	}
	require.NoError(t, exe.Close())
	given, err := benchproc.Build(bin, "")
	require.NoError(t, err)
	require.Equal(t, bin, given, "a binary given is used, not built")

	// start tags cmd, starts it with start and checks that it is the one
	// process with its tag.
	start := func(t *testing.T, cmd *exec.Cmd, start func(context.Context, *exec.Cmd, io.Writer) (*benchproc.Server, error)) (*benchproc.Server, *bytes.Buffer, string) {
		tag := t.Name() + "-" + strconv.Itoa(os.Getpid())
		cmd.Env = append(os.Environ(), tagEnv+"="+tag)
		var log bytes.Buffer
		srv, err := start(t.Context(), cmd, &log)
		require.NoError(t, err)
		require.Equal(t, []int{srv.Pid()}, proctest.Survivors(tagEnv, tag))
		return srv, &log, tag
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		flows := filepath.Join(dir, "flows")
		require.NoError(t, os.Mkdir(flows, 0o755))
		srv, log, tag := start(t, exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--no-auth", "--dir", dir, "--workflows", flows), benchproc.Serve)

		resp, err := client.Get(srv.URL + "/healthz")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s/healthz", srv.URL)

		now, peak, err := benchproc.RSS(srv.Pid())
		require.NoError(t, err)
		require.Positive(t, now)
		require.GreaterOrEqual(t, peak, now, "the peak resident set is at least the current one")
		_, err = benchproc.CPU(srv.Pid())
		require.NoError(t, err)

		require.NoError(t, srv.Stop(), "skein serve ends cleanly on SIGTERM")
		require.Empty(t, proctest.Survivors(tagEnv, tag), "no process is left")
		lines := strings.Split(strings.TrimSpace(log.String()), "\n")
		require.Greater(t, len(lines), 1, "the lines after the listening one are in the log too: %s", log)
		require.Contains(t, log.String(), `"msg":"listening"`)
	})

	t.Run("mcp", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cmd := exec.Command(bin, "mcp", "--http", "127.0.0.1:0", "--dir", dir)
		cmd.Dir = dir
		srv, log, tag := start(t, cmd, benchproc.MCP)

		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"benchproc","version":"1"}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, "POST initialize to %s: %s", srv.URL, body)
		require.NotEmpty(t, resp.Header.Get("Mcp-Session-Id"), "the answer opens a session")
		require.Contains(t, string(body), `"serverInfo"`)

		require.NoError(t, srv.Stop(), "skein mcp ends cleanly on SIGTERM")
		require.Empty(t, proctest.Survivors(tagEnv, tag), "no process is left")
		require.Contains(t, log.String(), "listening on "+srv.URL)
	})

	t.Run("exits before listening", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cmd := exec.Command(bin, "serve", "--addr", "no port", "--dir", dir)
		_, err := benchproc.Serve(t.Context(), cmd, nil)
		require.ErrorContains(t, err, "skein serve ended (exit status")
		require.ErrorContains(t, err, "no port", "the error shows what it said")
	})
}

// TestStartGivesUp kills a process that never says where it listens when
// the context ends, and says why it gave up.
func TestStartGivesUp(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	tag := t.Name() + "-" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), tagEnv+"="+tag)
	why := errors.New("waited long enough")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(why)
	_, err := benchproc.MCP(ctx, cmd, nil)
	require.ErrorIs(t, err, why)
	require.ErrorContains(t, err, "skein mcp did not say where it listens")
	require.Empty(t, proctest.Survivors(tagEnv, tag), "the process is killed")
}

// TestPageTouch measures a first write to fresh pages: a price, however
// small, and refused for less than a page.
func TestPageTouch(t *testing.T) {
	d, err := benchproc.PageTouch(1 << 20)
	require.NoError(t, err)
	require.Positive(t, d)
	_, err = benchproc.PageTouch(1)
	require.ErrorContains(t, err, "less than a page")
}

// TestSpin times its loop: a time, however small.
func TestSpin(t *testing.T) {
	require.Positive(t, benchproc.Spin(1e5))
}

// TestSyscall times its calls: a time, however small.
func TestSyscall(t *testing.T) {
	require.Positive(t, benchproc.Syscall(100))
}

// TestCycle: a cycle visits every entry before it comes back to the
// first, so that Load's steps are all different addresses.
func TestCycle(t *testing.T) {
	c := benchproc.NewCycle(4096)
	require.Len(t, c, 1024)
	seen := make([]bool, len(c))
	at := uint32(0)
	for range c {
		require.False(t, seen[at], "entry %d visited twice", at)
		seen[at] = true
		at = c[at]
	}
	require.Zero(t, at)
	require.Positive(t, c.Load(1000))
}

// TestState names the five measures with their units.
func TestState(t *testing.T) {
	line, err := benchproc.State()
	require.NoError(t, err)
	require.Regexp(t, `^a first write to a \d+ KiB page [0-9.]+ µs; 10\^8 multiply-adds on one core \d+ ms; a system call [0-9.]+ µs; a random load within 4 MiB \d+ ns, 32 MiB \d+ ns(; freed memory goes back to the host in \d+ KiB blocks)?$`, line)
}

// TestReporting finds a balloon that gives freed memory back to its host,
// and only such a balloon.
func TestReporting(t *testing.T) {
	sys := func(device, features, order string) fstest.MapFS {
		fsys := fstest.MapFS{
			"bus/virtio/devices/virtio0/device":   {Data: []byte("0x0002\n")}, // a disk
			"bus/virtio/devices/virtio0/features": {Data: []byte("0010001\n")},
			"bus/virtio/devices/virtio3/device":   {Data: []byte(device + "\n")},
			"bus/virtio/devices/virtio3/features": {Data: []byte(features + "\n")},
		}
		if order != "" {
			fsys["module/page_reporting/parameters/page_reporting_order"] = &fstest.MapFile{Data: []byte(order + "\n")}
		}
		return fsys
	}
	order, ok := benchproc.Reporting(sys("0x0005", "0110010100000000", "9"))
	require.True(t, ok)
	require.Equal(t, 9, order)
	for name, fsys := range map[string]fstest.MapFS{
		"a balloon without reporting": sys("0x0005", "0110000100000000", "9"),
		"no balloon":                  sys("0x0001", "0110010100000000", "9"),
		"no page_reporting module":    sys("0x0005", "0110010100000000", ""),
		"an order that is no number":  sys("0x0005", "0110010100000000", "nine"),
		"no /sys at all":              {},
	} {
		_, ok := benchproc.Reporting(fsys)
		require.False(t, ok, name)
	}
}
