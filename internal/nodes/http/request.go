package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/skeinhq/skein/node"
)

const (
	// defaultMaxBody is how many bytes of a response body are kept when
	// max_body is not set.
	defaultMaxBody = 10 << 20
	// maxRedirects is how many redirects one request follows.
	maxRedirects = 10
	// userAgent is sent unless the workflow sets its own.
	userAgent = "skein"
)

// errTooManyRedirects stops a redirect chain.
var errTooManyRedirects = fmt.Errorf("stopped after %d redirects", maxRedirects)

// request is one call's request with the options that govern its answer.
type request struct {
	req     *nethttp.Request
	follow  bool
	expect  []statusRange // nil: the default
	maxBody int64
	// hop is the URL of the latest redirect, for messages.
	hop *url.URL
}

// statusRange is an inclusive range of statuses: 404 is {404, 404}, "4xx"
// is {400, 499}.
type statusRange struct{ lo, hi int }

func (r statusRange) String() string {
	if r.lo == r.hi {
		return strconv.Itoa(r.lo)
	}
	return strconv.Itoa(r.lo/100) + "xx"
}

// expected reports whether status counts as success.
func (r *request) expected(status int) bool {
	if r.expect == nil {
		return status >= 200 && status <= 299 || !r.follow && status >= 300 && status <= 399
	}
	for _, sr := range r.expect {
		if status >= sr.lo && status <= sr.hi {
			return true
		}
	}
	return false
}

// checkRedirect is the client's redirect policy for this request.
func (r *request) checkRedirect(next *nethttp.Request, via []*nethttp.Request) error {
	if !r.follow {
		return nethttp.ErrUseLastResponse
	}
	r.hop = next.URL
	if len(via) > maxRedirects {
		return errTooManyRedirects
	}
	return nil
}

// invalid is a permanent error in the node's parameters.
func invalid(format string, args ...any) *node.Error {
	e := node.Failf(node.CategoryValidation, "invalid_param", format, args...)
	e.Permanent = true
	return e
}

// newRequest builds the request a call describes. The engine has coerced
// every parameter to its declared type and filled in the defaults; what is
// left to check here is what the types do not say (a URL, a status, a
// header name).
func newRequest(ctx context.Context, call *node.Call) (*request, error) {
	r := &request{follow: true, maxBody: defaultMaxBody}
	if call.Has("follow_redirects") {
		r.follow = call.Bool("follow_redirects")
	}
	if n, ok := call.Int("max_body"); ok {
		r.maxBody = int64(n)
	}
	if r.maxBody <= 0 {
		return nil, invalid("max_body is %d; it must be a positive number of bytes", r.maxBody)
	}
	var err error
	if r.expect, err = expectParam(call.List("expect_status")); err != nil {
		return nil, err
	}
	method := call.String("method")
	if method == "" {
		method = nethttp.MethodGet
	}
	u, err := parseURL(call.String("url"), call.Map("query"))
	if err != nil {
		return nil, err
	}
	body, ctype, err := bodyParam(call)
	if err != nil {
		return nil, err
	}
	req, err := nethttp.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, invalid("cannot make a %s request to %s: %v", method, safeURL(u), err)
	}
	if err := setHeaders(req, call.Map("headers")); err != nil {
		return nil, err
	}
	if ctype != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", ctype)
	}
	if err := setAuth(req, call.Map("auth")); err != nil {
		return nil, err
	}
	if method != nethttp.MethodGet && method != nethttp.MethodHead && call.IdempotencyKey != "" &&
		req.Header.Get("Idempotency-Key") == "" {
		req.Header.Set("Idempotency-Key", call.IdempotencyKey)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", userAgent)
	}
	r.req = req
	return r, nil
}

// parseURL parses url and merges query into it.
func parseURL(raw string, query map[string]any) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, invalid("url is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, invalid("url %s is not valid: %v", safeRawURL(raw), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, invalid("url %s must start with http:// or https://", safeRawURL(raw))
	}
	if u.Hostname() == "" {
		return nil, invalid("url %s has no host", safeRawURL(raw))
	}
	if query == nil {
		return u, nil
	}
	vals := u.Query()
	for k, v := range query {
		vs, err := values("query."+k, v)
		if err != nil {
			return nil, err
		}
		vals[k] = vs
	}
	u.RawQuery = vals.Encode()
	return u, nil
}

// bodyParam encodes json, body or form and returns the default
// Content-Type for it.
func bodyParam(call *node.Call) (io.Reader, string, error) {
	var set []string
	for _, k := range []string{"json", "body", "form"} {
		if call.Has(k) {
			set = append(set, k)
		}
	}
	if len(set) > 1 {
		return nil, "", invalid("set at most one of json, body or form, not %s", strings.Join(set, " and "))
	}
	if len(set) == 0 {
		return nil, "", nil
	}
	switch set[0] {
	case "json":
		b, err := json.Marshal(call.Params["json"])
		if err != nil {
			return nil, "", invalid("json cannot be encoded: %v", err)
		}
		return bytes.NewReader(b), "application/json", nil
	case "body":
		return strings.NewReader(call.String("body")), "text/plain; charset=utf-8", nil
	default:
		form := url.Values{}
		for k, fv := range call.Map("form") {
			vs, err := values("form."+k, fv)
			if err != nil {
				return nil, "", err
			}
			form[k] = vs
		}
		return strings.NewReader(form.Encode()), "application/x-www-form-urlencoded", nil
	}
}

// setHeaders adds the workflow's headers; a list value sends the header
// once per element.
func setHeaders(req *nethttp.Request, m map[string]any) error {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !validHeaderName(k) {
			return invalid("header name %q is not valid", k)
		}
		vs, err := values("headers."+k, m[k])
		if err != nil {
			return err
		}
		for _, s := range vs {
			if strings.ContainsAny(s, "\r\n\x00") {
				return invalid("header %s holds a line break or NUL, which HTTP does not allow", k)
			}
			if strings.EqualFold(k, "Host") {
				req.Host = s
				continue
			}
			req.Header.Add(k, s)
		}
	}
	return nil
}

// setAuth applies {type: bearer, token} or {type: basic, username,
// password}.
func setAuth(req *nethttp.Request, m map[string]any) error {
	if m == nil {
		return nil
	}
	typ, _ := text(m["type"])
	field := func(name string) (string, error) {
		s, ok := text(m[name])
		if !ok {
			return "", invalid("auth.%s must be text, not %s", name, node.Describe(m[name]))
		}
		if strings.ContainsAny(s, "\r\n\x00") {
			return "", invalid("auth.%s holds a line break or NUL", name)
		}
		return s, nil
	}
	switch strings.ToLower(typ) {
	case "bearer":
		token, err := field("token")
		if err != nil {
			return err
		}
		if token == "" {
			return invalid("auth.token is empty")
		}
		req.Header.Set("Authorization", "Bearer "+token)
	case "basic":
		user, err := field("username")
		if err != nil {
			return err
		}
		pass, err := field("password")
		if err != nil {
			return err
		}
		req.SetBasicAuth(user, pass)
	case "":
		return invalid("auth needs a type: bearer or basic")
	default:
		return invalid("auth type %q is not bearer or basic", typ)
	}
	return nil
}

// expectParam reads expect_status: a list of statuses (404) and classes
// ("4xx").
func expectParam(list []any) ([]statusRange, error) {
	if list == nil {
		return nil, nil
	}
	if len(list) == 0 {
		return nil, invalid(emptyExpect)
	}
	out := make([]statusRange, 0, len(list))
	for _, e := range list {
		sr, ok := parseStatus(e)
		if !ok {
			return nil, invalid("expect_status holds %s; give statuses such as 200 or classes such as \"2xx\"", node.Describe(e))
		}
		out = append(out, sr)
	}
	return out, nil
}

// emptyExpect says why an empty expect_status is refused: no status would
// count as success.
const emptyExpect = "expect_status is empty, so no status would count as success; list them, such as [200] or [\"2xx\"], or leave it out for any 2xx"

// anInt is how a whole number is read where a parameter's elements are
// not coerced (the statuses of expect_status).
var anInt = node.Param{Type: node.Int, Min: 100, Max: 599}

func parseStatus(v any) (statusRange, bool) {
	if s, ok := v.(string); ok {
		s = strings.ToLower(strings.TrimSpace(s))
		if len(s) == 3 && s[1:] == "xx" && s[0] >= '1' && s[0] <= '5' {
			lo := int(s[0]-'0') * 100
			return statusRange{lo, lo + 99}, true
		}
	}
	n, err := anInt.Coerce(v)
	if err != nil || n == nil {
		return statusRange{}, false
	}
	return statusRange{n.(int), n.(int)}, true
}

// values turns a header, query or form value into its strings: a scalar
// gives one, a list one per element, null none.
func values(name string, v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	if list, ok := v.([]any); ok {
		out := make([]string, 0, len(list))
		for _, e := range list {
			s, ok := text(e)
			if !ok {
				return nil, invalid("%s holds %s; values must be text, numbers or booleans", name, node.Describe(e))
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, ok := text(v)
	if !ok {
		return nil, invalid("%s is %s; values must be text, numbers or booleans (or a list of them)", name, node.Describe(v))
	}
	return []string{s}, nil
}

// text writes a string, number or boolean as text (node.Text), and
// refuses lists and maps.
func text(v any) (string, bool) {
	switch v.(type) {
	case []any, map[string]any:
		return "", false
	}
	s, err := node.Text(v)
	return s, err == nil
}

// validHeaderName reports whether s is an HTTP token (RFC 9110 §5.1).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// safeURL writes u without user info, query or fragment, which often carry
// secrets, for messages and details.
func safeURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.ForceQuery = false
	c.Fragment = ""
	c.RawFragment = ""
	return c.String()
}

// safeRawURL is safeURL for text that did not parse as a URL.
func safeRawURL(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	rest, scheme := raw, ""
	if i := strings.Index(raw, "://"); i >= 0 {
		scheme, rest = raw[:i+3], raw[i+3:]
	}
	host := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host = rest[:i]
	}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	return strconv.Quote(scheme + rest)
}
