package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cli"
)

// logWriter is stderr for a command running in the test: it keeps what is
// written and tells each write.
type logWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{}
}

func newLogWriter() *logWriter { return &logWriter{written: make(chan struct{}, 1)} }

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	select {
	case w.written <- struct{}{}:
	default:
	}
	return n, err
}

func (w *logWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor waits until a line matches re and returns its submatches, or
// fails when the command ended first.
func (w *logWriter) waitFor(t *testing.T, re *regexp.Regexp, ended <-chan int) []string {
	t.Helper()
	for {
		if m := re.FindStringSubmatch(w.String()); m != nil {
			return m
		}
		select {
		case <-w.written:
		case code := <-ended:
			t.Fatalf("the command ended (exit %d) before logging %s:\n%s", code, re, w.String())
		}
	}
}

// serveLogs starts skein serve with args, waits for a line matching re,
// calls then, stops the server and returns its stderr.
func serveLogs(t *testing.T, re *regexp.Regexp, then func(m []string), args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := newLogWriter()
	ended := make(chan int, 1)
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--no-auth", "--dir", filepath.Join(t.TempDir(), ".skein"),
		"--workflows", t.TempDir()}, args...)
	go func() { ended <- cli.Main(ctx, args, strings.NewReader(""), &bytes.Buffer{}, stderr) }()
	m := stderr.waitFor(t, re, ended)
	then(m)
	cancel()
	require.Equal(t, 0, <-ended, stderr.String())
	return stderr.String()
}

// TestLogFormatAndLevel: skein serve logs text or JSON lines as
// --log-format says, from --log-level up; bad values are usage errors.
func TestLogFormatAndLevel(t *testing.T) {
	t.Parallel()
	t.Run("text at debug", func(t *testing.T) {
		t.Parallel()
		logs := serveLogs(t, regexp.MustCompile(`level=INFO msg=listening addr=(\S+)`), func(m []string) {
			res, err := http.Get("http://" + m[1] + "/healthz")
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
		}, "--log-format", "text", "--log-level", "debug")
		lines := strings.Split(strings.TrimSpace(logs), "\n")
		for _, l := range lines {
			require.Regexp(t, `^time=\S+ level=(DEBUG|INFO|WARN|ERROR) msg=`, l)
		}
		require.Regexp(t, `(?m)^time=\S+ level=DEBUG msg=request method=GET path=/healthz status=200 `, logs,
			"at debug the probes' requests are logged")
	})
	t.Run("json at info", func(t *testing.T) {
		t.Parallel()
		logs := serveLogs(t, regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`), func(m []string) {
			res, err := http.Get("http://" + m[1] + "/healthz")
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
		}, "--log-format", "json")
		var listening bool
		for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
			var line map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &line), "a JSON line: %s", l)
			require.NotEmpty(t, line["time"], l)
			require.NotEqual(t, "DEBUG", line["level"], "info leaves out debug lines: %s", l)
			require.NotEqual(t, "/healthz", line["path"], "the probe's request is a debug line: %s", l)
			listening = listening || line["msg"] == "listening"
		}
		require.True(t, listening, logs)
	})
	t.Run("warn leaves out info", func(t *testing.T) {
		t.Parallel()
		logs := serveLogs(t, regexp.MustCompile(`level=WARN msg="serving without authentication`), func([]string) {},
			"--log-format", "text", "--log-level", "warn")
		require.NotContains(t, logs, "level=INFO", "at warn, info lines are left out")
	})
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"serve format", []string{"serve", "--log-format", "xml"}, `--log-format "xml": give text or json`},
		{"serve level", []string{"serve", "--log-level", "verbose"}, `--log-level "verbose": give debug, info, warn or error`},
		{"worker level", []string{"worker", "--db", "postgres://nobody@127.0.0.1:1/none", "--log-level", "loud"}, `--log-level "loud": give debug, info, warn or error`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := skein(t, append(c.args, "--dir", filepath.Join(t.TempDir(), ".skein"))...)
			require.Equal(t, 2, r.code, r.stderr)
			require.Contains(t, r.stderr, c.want)
		})
	}
}
