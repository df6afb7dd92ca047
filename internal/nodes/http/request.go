package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	nethttp "net/http"
	"net/url"
	"slices"
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

// newRequest builds the request a call describes.
func newRequest(ctx context.Context, call *node.Call) (*request, error) {
	p := call.Params
	r := &request{follow: true, maxBody: defaultMaxBody}
	var err error
	if r.follow, err = boolParam(p, "follow_redirects", true); err != nil {
		return nil, err
	}
	if r.maxBody, err = intParam(p, "max_body", defaultMaxBody); err != nil {
		return nil, err
	}
	if r.maxBody <= 0 {
		return nil, invalid("max_body is %d; it must be a positive number of bytes", r.maxBody)
	}
	if r.expect, err = expectParam(p["expect_status"]); err != nil {
		return nil, err
	}
	method, err := methodParam(p)
	if err != nil {
		return nil, err
	}
	u, err := urlParam(p)
	if err != nil {
		return nil, err
	}
	body, ctype, err := bodyParam(p)
	if err != nil {
		return nil, err
	}
	req, err := nethttp.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, invalid("cannot make a %s request to %s: %v", method, safeURL(u), err)
	}
	if err := setHeaders(req, p["headers"]); err != nil {
		return nil, err
	}
	if ctype != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", ctype)
	}
	if err := setAuth(req, p["auth"]); err != nil {
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

func methodParam(p map[string]any) (string, error) {
	m, err := stringParam(p, "method")
	if err != nil {
		return "", err
	}
	m = strings.ToUpper(strings.TrimSpace(m))
	if m == "" {
		return nethttp.MethodGet, nil
	}
	decl, _ := Spec.Param("method")
	if !slices.Contains(decl.Enum, m) {
		return "", invalid("method %q is not one of %s", m, strings.Join(decl.Enum, ", "))
	}
	return m, nil
}

// urlParam parses url and merges query into it.
func urlParam(p map[string]any) (*url.URL, error) {
	raw, err := stringParam(p, "url")
	if err != nil {
		return nil, err
	}
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
	q, ok := p["query"]
	if !ok || q == nil {
		return u, nil
	}
	m, ok := q.(map[string]any)
	if !ok {
		return nil, invalid("query must be a map of names to values, not %s", typeName(q))
	}
	vals := u.Query()
	for k, v := range m {
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
func bodyParam(p map[string]any) (io.Reader, string, error) {
	var set []string
	for _, k := range []string{"json", "body", "form"} {
		if _, ok := p[k]; ok {
			set = append(set, k)
		}
	}
	if len(set) > 1 {
		return nil, "", invalid("set at most one of json, body or form, not %s", strings.Join(set, " and "))
	}
	if len(set) == 0 {
		return nil, "", nil
	}
	switch v := p[set[0]]; set[0] {
	case "json":
		b, err := json.Marshal(v)
		if err != nil {
			return nil, "", invalid("json cannot be encoded: %v", err)
		}
		return bytes.NewReader(b), "application/json", nil
	case "body":
		s, ok := scalar(v)
		if !ok {
			return nil, "", invalid("body must be text, not %s; send structured values with json: or form:", typeName(v))
		}
		return strings.NewReader(s), "text/plain; charset=utf-8", nil
	default:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, "", invalid("form must be a map of field names to values, not %s", typeName(v))
		}
		form := url.Values{}
		for k, fv := range m {
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
func setHeaders(req *nethttp.Request, v any) error {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return invalid("headers must be a map of names to values, not %s", typeName(v))
	}
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
func setAuth(req *nethttp.Request, v any) error {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return invalid("auth must be {type: bearer, token} or {type: basic, username, password}, not %s", typeName(v))
	}
	typ, _ := scalar(m["type"])
	field := func(name string) (string, error) {
		s, ok := scalar(m[name])
		if !ok {
			return "", invalid("auth.%s must be text, not %s", name, typeName(m[name]))
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
func expectParam(v any) ([]statusRange, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	out := make([]statusRange, 0, len(list))
	for _, e := range list {
		sr, ok := parseStatus(e)
		if !ok {
			return nil, invalid("expect_status holds %v; give statuses such as 200 or classes such as \"2xx\"", e)
		}
		out = append(out, sr)
	}
	return out, nil
}

func parseStatus(v any) (statusRange, bool) {
	if s, ok := v.(string); ok {
		s = strings.ToLower(strings.TrimSpace(s))
		if len(s) == 3 && s[1:] == "xx" && s[0] >= '1' && s[0] <= '5' {
			lo := int(s[0]-'0') * 100
			return statusRange{lo, lo + 99}, true
		}
	}
	n, ok := toInt(v)
	if !ok || n < 100 || n > 599 {
		return statusRange{}, false
	}
	return statusRange{int(n), int(n)}, true
}

// stringParam reads a text parameter; a missing one is "".
func stringParam(p map[string]any, name string) (string, error) {
	v, ok := p[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := scalar(v)
	if !ok {
		return "", invalid("%s must be text, not %s", name, typeName(v))
	}
	return s, nil
}

func boolParam(p map[string]any, name string, def bool) (bool, error) {
	switch v := p[name].(type) {
	case nil:
		return def, nil
	case bool:
		return v, nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b, nil
		}
	}
	return false, invalid("%s must be true or false, not %v", name, p[name])
}

func intParam(p map[string]any, name string, def int64) (int64, error) {
	v, ok := p[name]
	if !ok || v == nil {
		return def, nil
	}
	n, ok := toInt(v)
	if !ok {
		return 0, invalid("%s must be a whole number, not %v", name, v)
	}
	return n, nil
}

// toInt reads a whole number written as any Go number type or as text.
func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint:
		return int64(n), n <= math.MaxInt64
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		return int64(n), n <= math.MaxInt64
	case float32:
		return toInt(float64(n))
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, false
		}
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		return i, err == nil
	}
	return 0, false
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
			s, ok := scalar(e)
			if !ok {
				return nil, invalid("%s holds %s; values must be text, numbers or booleans", name, typeName(e))
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, ok := scalar(v)
	if !ok {
		return nil, invalid("%s is %s; values must be text, numbers or booleans (or a list of them)", name, typeName(v))
	}
	return []string{s}, nil
}

// scalar writes a string, number or boolean as text.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), true
	case json.Number:
		return x.String(), true
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x), true
	}
	return "", false
}

// typeName names a value's type the way a workflow author would.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case string:
		return "text"
	case bool:
		return "a boolean"
	}
	if _, ok := toInt(v); ok {
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
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
