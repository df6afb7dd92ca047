package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/internal/pathscrub"
)

// ServeStdio serves one client on in and out (a process's stdin and
// stdout) until the client hangs up or ctx ends.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	err := s.mcp.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Path is where the server answers over HTTP.
const Path = "/mcp"

// HTTPConfig is how the server serves streamable HTTP.
type HTTPConfig struct {
	// Token, when set, is the bearer token every request must carry.
	Token string
	// SessionIdle is how long a session may go without a request before
	// it is closed and forgotten (0: never). A call in progress keeps its
	// session open; a client that only listens on its event stream must
	// ping.
	SessionIdle time.Duration
	// MaxSessions is the most sessions kept open at once (0:
	// DefaultMaxSessions). A new session past it closes the least recently
	// used session that has no call in progress; when every session has
	// one, its initialize is answered 503 Service Unavailable with
	// Retry-After.
	MaxSessions int
}

// Handler serves the server over streamable HTTP at Path. With a token,
// every request must carry it as a bearer token. It keeps at most
// hc.MaxSessions sessions (see HTTPConfig); a server has one Handler.
func (s *Server) Handler(hc HTTPConfig) http.Handler {
	roots := map[string]string{s.cfg.Runner.Dir: "the data folder"}
	if wd, err := os.Getwd(); err == nil {
		roots[wd] = "the working folder"
		s.files.CompareAndSwap(nil, &wd)
	}
	if w := s.cfg.Workflows; w != "" {
		if abs, err := filepath.Abs(w); err == nil {
			roots[abs] = "the workflows folder"
		}
	}
	s.paths.Store(pathscrub.New(roots))
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.mcp }, &sdk.StreamableHTTPOptions{
		SessionTimeout: hc.SessionIdle,
	})
	h = answerClosedSessions(h)
	h = s.capSessions(hc.MaxSessions, h)
	h = http.NewCrossOriginProtection().Handler(h)
	if hc.Token != "" {
		h = requireBearer(hc.Token, h)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	return mux
}

// answerClosedSessions answers 404 Not Found to a POST on a session that
// the SDK's handler left without any answer. The handler does that to a
// request that arrives while its session is being closed (an idle one,
// say): the session has stopped but is not yet forgotten. 404 is what
// the protocol answers for a session that no longer exists, and tells
// the client to start a new one; an empty 200 would tell it nothing.
func answerClosedSessions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get(sessionIDHeader) == "" {
			next.ServeHTTP(w, r)
			return
		}
		aw := &answerWriter{ResponseWriter: w}
		next.ServeHTTP(aw, r)
		if !aw.answered {
			http.Error(w, "session not found", http.StatusNotFound)
		}
	})
}

// answerWriter notes whether anything was written. Flushes go through it
// (http.ResponseController finds FlushError first), so that a flushed
// status counts.
type answerWriter struct {
	http.ResponseWriter
	answered bool
}

func (w *answerWriter) WriteHeader(code int) {
	w.answered = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerWriter) Write(p []byte) (int, error) {
	w.answered = true
	return w.ResponseWriter.Write(p)
}

func (w *answerWriter) FlushError() error {
	w.answered = true
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func requireBearer(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="skein"`)
			http.Error(w, "a bearer token is required (Authorization: Bearer <token>)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ServeStreamableHTTP serves streamable HTTP on ln until ctx ends. The calls being
// answered then end (cancelled) and their results are sent before it
// returns.
func (s *Server) ServeStreamableHTTP(ctx context.Context, ln net.Listener, hc HTTPConfig) error {
	// posts are the requests that carry calls; their answers are written
	// before the server stops. (GETs are event streams that never end.)
	var posts inflight
	h := s.Handler(hc)
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			if !posts.enter() {
				http.Error(w, "skein mcp is shutting down", http.StatusServiceUnavailable)
				return
			}
			defer posts.leave()
		}
		h.ServeHTTP(w, r)
	})}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	s.drain()
	posts.close()
	for ss := range s.mcp.Sessions() {
		_ = ss.Close() // ends the clients' event streams
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(stopCtx); err != nil {
		_ = hs.Close()
	}
	<-served
	return nil
}
