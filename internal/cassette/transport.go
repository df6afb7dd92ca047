package cassette

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"
)

// httpRequest is an HTTP request as a cassette keeps it. Body is the
// request's JSON when it is JSON, else its text.
type httpRequest struct {
	Method string `json:"method"`
	// Host is the scheme and host: recorded, not matched.
	Host    string              `json:"host"`
	URL     string              `json:"url"`
	Headers map[string][]string `json:"headers,omitempty"`
	Body    any                 `json:"body,omitempty"`
}

// httpResponse is an HTTP answer as a cassette keeps it.
type httpResponse struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers,omitempty"`
	// Body is the body's text; BodyBase64 holds it when it is not UTF-8.
	Body       string `json:"body,omitempty"`
	BodyBase64 []byte `json:"body_base64,omitempty"`
}

// unkept are the request headers a cassette leaves out: credentials
// (a model's API key need not be one of the run's secrets), and what
// clients set on their own and vary between attempts or versions.
var unkept = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "X-Api-Key": true, "Api-Key": true,
	"User-Agent": true, "Content-Length": true, "Accept-Encoding": true, "Idempotency-Key": true,
}

func kept(h http.Header) map[string][]string {
	out := map[string][]string{}
	for k, v := range h {
		if unkept[k] || strings.HasPrefix(k, "X-Stainless-") {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Transport returns a RoundTripper that records or replays the requests
// sent through base, each as the interaction of the node whose context it
// carries (node.CallFrom). When replaying, base is never used but for a
// request the cassette lacks under allowNew.
func (t *Tape) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{t: t, base: base}
}

type transport struct {
	t    *Tape
	base http.RoundTripper
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	hr := httpRequest{Method: req.Method, Host: req.URL.Scheme + "://" + req.URL.Host, URL: req.URL.RequestURI(), Headers: kept(req.Header)}
	if len(body) > 0 {
		var v any
		if json.Unmarshal(body, &v) == nil {
			hr.Body = v
		} else {
			hr.Body = string(body)
		}
	}
	ctx := req.Context()
	if !tr.t.replay {
		return tr.record(ctx, req, hr)
	}
	ans, err := Do(ctx, tr.t, KindHTTP, hr, func(ctx context.Context) (httpResponse, error) {
		// --allow-new: sent live and kept whole before it is answered.
		resp, err := tr.base.RoundTrip(req)
		if err != nil {
			return httpResponse{}, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return httpResponse{}, err
		}
		return toResponse(resp, b), nil
	})
	if err != nil {
		return nil, err
	}
	return fromResponse(req, ans), nil
}

// record sends req and keeps the exchange once the answer's body has been
// read or closed; the body reaches the caller as it arrives (a stream).
func (tr *transport) record(ctx context.Context, req *http.Request, hr httpRequest) (*http.Response, error) {
	k := tr.t.keyOf(ctx, KindHTTP)
	m, err := tr.t.request(hr)
	if err != nil {
		return nil, err
	}
	resp, err := tr.base.RoundTrip(req)
	if err != nil {
		tr.t.keep(k, m, nil, err)
		return nil, err
	}
	resp.Body = &teeBody{rc: resp.Body, done: func(b []byte) { tr.t.keep(k, m, toResponse(resp, b), nil) }}
	return resp, nil
}

func toResponse(resp *http.Response, b []byte) httpResponse {
	h := resp.Header.Clone()
	// A session a server hands out is a credential: the cassette keeps
	// each cookie's name, its value masked, so that a replayed answer
	// still sets it.
	for i, c := range h.Values("Set-Cookie") {
		h["Set-Cookie"][i] = MaskCookie(c)
	}
	out := httpResponse{Status: resp.StatusCode, Headers: h}
	if utf8.Valid(b) {
		out.Body = string(b)
	} else {
		out.BodyBase64 = b
	}
	return out
}

func fromResponse(req *http.Request, a httpResponse) *http.Response {
	body := []byte(a.Body)
	if a.BodyBase64 != nil {
		body = a.BodyBase64
	}
	h := http.Header(a.Headers)
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{
		Status: http.StatusText(a.Status), StatusCode: a.Status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}

// teeBody keeps what is read of a body and hands it to done once, at EOF
// or close.
type teeBody struct {
	rc   io.ReadCloser
	buf  bytes.Buffer
	once sync.Once
	done func([]byte)
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.buf.Write(p[:n])
	if err == io.EOF {
		b.finish()
	}
	return n, err
}

func (b *teeBody) Close() error {
	err := b.rc.Close()
	b.finish()
	return err
}

func (b *teeBody) finish() { b.once.Do(func() { b.done(b.buf.Bytes()) }) }

// MaskCookie is a Set-Cookie header's value as a cassette keeps it: the
// cookie's name and a masked value, without its attributes.
func MaskCookie(v string) string {
	name, _, _ := strings.Cut(v, "=")
	return strings.TrimSpace(name) + "=***"
}
