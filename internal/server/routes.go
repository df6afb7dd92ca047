package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/web"
)

// Route is one route of the API: a method, a ServeMux path pattern and the
// scope a token needs for it (auth.None: no token).
type Route struct {
	Method string
	Path   string
	Scope  auth.Scope
	h      func(w http.ResponseWriter, r *http.Request) error
}

// Routes returns the routes the server answers, in registration order.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// register builds the route table and the mux.
func (s *Server) register() {
	s.routes = []Route{
		{"GET", "/healthz", auth.None, s.healthz},
		{"GET", "/readyz", auth.None, s.readyz},
		{"GET", "/metrics", auth.Read, s.metrics},
		{"GET", "/api/workflows", auth.Read, s.listWorkflows},
		{"GET", "/api/workflows/{name}", auth.Read, s.getWorkflow},
		{"POST", "/api/workflows", auth.Edit, s.createWorkflow},
		{"POST", "/api/workflows/validate", auth.Edit, s.validateWorkflow},
		{"POST", "/api/workflows/edit", auth.Edit, s.editWorkflow},
		{"GET", "/api/workflows/{name}/source", auth.Read, s.getSource},
		{"PUT", "/api/workflows/{name}/source", auth.Edit, s.putSource},
		{"GET", "/api/kinds", auth.Read, s.kinds},
		{"GET", "/api/schema/workflow", auth.Read, s.workflowSchema},
		{"POST", "/api/workflows/{name}/runs", auth.Run, s.startRun},
		{"POST", "/api/workflows/{name}/try", auth.Edit, s.tryWorkflow},
		{"GET", "/api/runs", auth.Read, s.listRuns},
		{"GET", "/api/runs/{id}", auth.Read, s.getRun},
		{"GET", "/api/runs/{id}/graph", auth.Read, s.runGraph},
		{"POST", "/api/runs/{id}/cancel", auth.Run, s.cancelRun},
		{"POST", "/api/runs/{id}/resume", auth.Run, s.resumeRun},
		{"POST", "/api/runs/{id}/rerun", auth.Run, s.rerunRun},
		{"POST", "/api/runs/{id}/signals/{node}", auth.Run, s.signalRun},
		{"GET", "/api/runs/{id}/events", auth.Read, s.runEvents},
		{"GET", "/api/runs/{id}/artifacts", auth.Read, s.listArtifacts},
		{"GET", "/api/runs/{id}/artifacts/{node}/{name}", auth.Read, s.getArtifact},
		{"GET", "/api/runs/{id}/blobs/{sha256}", auth.Read, s.getBlob},
		{"POST", "/api/chat/{workflow}", auth.Run, s.chat},
		{"GET", "/api/schedules", auth.Read, s.listSchedules},
		{"GET", "/api/openapi.yaml", auth.Read, s.openAPI},
		{"POST", "/api/session", auth.None, s.signIn},
		{"GET", "/api/session", auth.Read, s.session},
		{"DELETE", "/api/session", auth.None, s.signOut},
	}
	s.routes = append(s.routes, s.hookRoutes()...)
	for _, rt := range s.routes {
		s.mux.Handle(rt.Method+" "+rt.Path, s.guard(rt))
	}
	// The web viewer: its page and files.
	page := web.Handler()
	s.mux.Handle("GET /{$}", page)
	s.mux.Handle("GET /assets/", page)
	// Unknown paths, and other methods on known paths, are problems too.
	s.mux.Handle("/", http.HandlerFunc(s.noRoute))
}

// noRoute answers a request no route takes: 405 when the path has routes
// for other methods, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pat := s.mux.Handler(probe); strings.HasPrefix(pat, m+" ") {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		s.writeProblem(w, r, problemf(http.StatusNotFound, CodeNotFound, "no route %s %s; docs/api.md lists the routes", r.Method, r.URL.Path))
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	s.writeProblem(w, r, problemf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s %s: use %s", r.Method, r.URL.Path, strings.Join(allow, " or ")))
}

// guard checks the request's scope against the route's, then runs it; an
// error it returns is answered as a problem.
func (s *Server) guard(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if have := scopeOf(r.Context()); !have.Allows(rt.Scope) {
			// The request's own path, which answers keep as they are
			// (the route's pattern would read as a path to scrub).
			s.writeProblem(w, r, problemf(http.StatusForbidden, CodeForbidden,
				"%s %s needs a token of scope %s; this token's scope is %s", r.Method, r.URL.Path, rt.Scope, have))
			return
		}
		if err := rt.h(w, r); err != nil {
			s.writeProblem(w, r, err)
		}
	})
}

type scopeKey struct{}

// scopeOf is the scope the request was authenticated with.
func scopeOf(ctx context.Context) auth.Scope {
	sc, _ := ctx.Value(scopeKey{}).(auth.Scope)
	return sc
}

// tokenless tells the requests that need no API token: GET /healthz and
// /readyz (probes, which say only alive or ready), the
// webhooks (which check their trigger's auth), the web viewer's files
// (a sign-in page without a token: everything it shows comes from the
// API) and signing in and out.
func tokenless(r *http.Request) bool {
	p := r.URL.Path
	switch {
	case p == "/healthz", p == "/readyz", strings.HasPrefix(p, hookPrefix):
		return true
	case p == "/api/session":
		return r.Method == http.MethodPost || r.Method == http.MethodDelete
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return p == "/" || strings.HasPrefix(p, "/assets/")
	}
	return false
}

// authenticate denies by default: every request but the open ones needs
// a valid API token (401 otherwise), whose scope the routes check: a
// bearer token, or the web viewer's session cookie, with which a
// state-changing request must carry the session's CSRF token (403
// otherwise). With no Authenticator (--no-auth) every request has scope
// admin.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Auth == nil {
			if err := s.sameMachine(r); err != nil {
				s.writeProblem(w, r, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), scopeKey{}, auth.Admin)))
			return
		}
		if tokenless(r) {
			next.ServeHTTP(w, r) // hooks check their trigger's own auth
			return
		}
		token, fromCookie := credential(r)
		if token == "" {
			s.writeProblem(w, r, problemf(http.StatusUnauthorized, CodeUnauthorized,
				"send an API token as Authorization: Bearer <token> (skein token create makes one)"))
			return
		}
		sc, err := s.cfg.Auth.Authenticate(r.Context(), token)
		if err != nil && !errors.Is(err, auth.ErrInvalid) {
			// The tokens could not be read: the store does not answer,
			// which says nothing of the token.
			s.log.WarnContext(r.Context(), "tokens not readable", "path", r.URL.Path, "err", err)
			s.writeProblem(w, r, problemf(http.StatusServiceUnavailable, CodeUnavailable, "the store does not answer; try again"))
			return
		}
		if err != nil || sc == auth.None {
			s.log.WarnContext(r.Context(), "token refused", "path", r.URL.Path, "remote", r.RemoteAddr, "cookie", fromCookie, "err", err)
			s.writeProblem(w, r, problemf(http.StatusUnauthorized, CodeUnauthorized, "the API token is not valid"))
			return
		}
		ctx := context.WithValue(r.Context(), scopeKey{}, sc)
		if fromCookie {
			if err := s.checkCSRF(r, token); err != nil {
				s.writeProblem(w, r, err)
				return
			}
			ctx = withSessionToken(ctx, token)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// sameMachine keeps a server without tokens (--no-auth, on a loopback
// address) to the programs of its machine: any web page a browser there
// shows could otherwise use it — a cross-site POST (a "simple" request
// needs no preflight) could write a workflow and run it, and a name of
// the attacker's that resolves to 127.0.0.1 (DNS rebinding) could read
// it. So a request must name the server by a loopback host (Host), and a
// request that changes something must not come from another site's page
// (Sec-Fetch-Site, Origin: http.CrossOriginProtection). Webhooks, which
// check their trigger's own secret, and the probes are not held to it.
func (s *Server) sameMachine(r *http.Request) error {
	if p := r.URL.Path; p == "/healthz" || p == "/readyz" || strings.HasPrefix(p, hookPrefix) {
		return nil
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	if !(host == "localhost" || strings.HasSuffix(host, ".localhost") || (ip != nil && ip.IsLoopback())) {
		return problemf(http.StatusForbidden, CodeForbidden,
			"a server without tokens (--no-auth) answers only requests to a loopback address, not to %q: use http://127.0.0.1:PORT or http://localhost:PORT", r.Host)
	}
	if err := crossOrigin.Check(r); err != nil {
		return problemf(http.StatusForbidden, CodeForbidden,
			"a server without tokens (--no-auth) takes no request that changes something from another site's page (%v)", err)
	}
	return nil
}

// crossOrigin tells the requests a browser sends from another site's page.
var crossOrigin = http.NewCrossOriginProtection()

// logRequests logs each request once it is answered.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		level := slog.LevelInfo
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics" {
			level = slog.LevelDebug
		}
		s.log.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path, "status", sw.status,
			"duration_ms", time.Since(start).Milliseconds(), "remote", r.RemoteAddr)
	})
}

// statusWriter notes the status of an answer. Flushes go through it.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
