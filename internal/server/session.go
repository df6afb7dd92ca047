package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/skeinhq/skein/internal/auth"
)

// The web viewer signs in with an API token: POST /api/session checks it
// and keeps it in an HttpOnly, SameSite=Strict cookie, which then
// authenticates the page's requests as the token would. A request
// authenticated by the cookie that may change something (any method but
// GET, HEAD and OPTIONS) must also carry the session's CSRF token in the
// X-Skein-CSRF header: an HMAC of the API token under a key of this
// process, which only the page, reading GET /api/session, learns.
const (
	sessionCookie = "skein_session"
	csrfHeader    = "X-Skein-CSRF"
)

// SessionBody is the body of POST /api/session.
type SessionBody struct {
	Token string `json:"token"`
}

// SessionDoc describes the session of a request: the scope it may use
// and the CSRF token its state-changing requests carry. Auth is false on
// a server without authentication (--no-auth).
type SessionDoc struct {
	Scope string `json:"scope"`
	CSRF  string `json:"csrf,omitempty"`
	Auth  bool   `json:"auth"`
}

type sessionTokenKey struct{}

// csrfToken is the CSRF token of a session whose API token is token.
func (s *Server) csrfToken(token string) string {
	m := hmac.New(sha256.New, s.csrfKey[:])
	m.Write([]byte("skein csrf\x00" + token))
	return hex.EncodeToString(m.Sum(nil))
}

// signIn checks the body's API token and sets the session cookie.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) error {
	var body SessionBody
	if err := decodeBody(w, r, &body); err != nil {
		return err
	}
	body.Token = strings.TrimSpace(body.Token)
	if s.cfg.Auth == nil {
		writeJSON(w, http.StatusOK, SessionDoc{Scope: auth.Admin.String()})
		return nil
	}
	if body.Token == "" {
		return problemf(http.StatusBadRequest, CodeBadRequest, `send {"token": "<API token>"} (skein token create makes one)`)
	}
	sc, err := s.cfg.Auth.Authenticate(r.Context(), body.Token)
	if err != nil || sc == auth.None {
		s.log.WarnContext(r.Context(), "sign-in refused", "remote", r.RemoteAddr, "err", err)
		return problemf(http.StatusUnauthorized, CodeUnauthorized, "the API token is not valid")
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: body.Token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
	writeJSON(w, http.StatusOK, SessionDoc{Scope: sc.String(), CSRF: s.csrfToken(body.Token), Auth: true})
	return nil
}

// session tells the page its scope and CSRF token.
func (s *Server) session(w http.ResponseWriter, r *http.Request) error {
	doc := SessionDoc{Scope: scopeOf(r.Context()).String(), Auth: s.cfg.Auth != nil}
	if tok, ok := r.Context().Value(sessionTokenKey{}).(string); ok {
		doc.CSRF = s.csrfToken(tok)
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}

// overTLS reports whether the browser reached the server over TLS: its
// own, or a reverse proxy's that says so (X-Forwarded-Proto: https, or
// Forwarded: proto=https), as skein serve is deployed (docs/deploy.md).
// A client that claims it falsely only makes its own cookie stricter.
func overTLS(r *http.Request) bool {
	if r.TLS != nil || strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https") {
		return true
	}
	for _, part := range strings.FieldsFunc(r.Header.Get("Forwarded"), func(c rune) bool { return c == ';' || c == ',' }) {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && strings.EqualFold(k, "proto") && strings.EqualFold(strings.Trim(v, `"`), "https") {
			return true
		}
	}
	return false
}

// signOut clears the session cookie.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) error {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// credential is the API token of a request: its bearer token, else its
// session cookie (fromCookie).
func credential(r *http.Request) (token string, fromCookie bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return "", false
		}
		return strings.TrimSpace(tok), false
	}
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		return c.Value, true
	}
	return "", false
}

// safeMethod: a request of this method changes nothing.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// checkCSRF refuses a state-changing request authenticated by the
// session cookie without the session's CSRF token.
func (s *Server) checkCSRF(r *http.Request, token string) error {
	if safeMethod(r.Method) {
		return nil
	}
	got := r.Header.Get(csrfHeader)
	if got == "" || !hmac.Equal([]byte(got), []byte(s.csrfToken(token))) {
		return problemf(http.StatusForbidden, CodeCSRF, "a request signed in by the session cookie must carry the %s header that GET /api/session gives", csrfHeader)
	}
	return nil
}

func withSessionToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, sessionTokenKey{}, token)
}
