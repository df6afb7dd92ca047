package http

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/node"
)

// maxErrorBody is how much of a failed response's body an error keeps.
const maxErrorBody = 2 << 10

// statusError is the error of a response whose status was not expected.
// 408, 429 and 5xx may be retried (no sooner than Retry-After); other 4xx
// are permanent.
func statusError(r *request, resp *nethttp.Response, body []byte, elapsed time.Duration, call *node.Call) *node.Error {
	status := resp.StatusCode
	where := r.req.Method + " " + safeURL(r.req.URL)
	if resp.Request != nil { // the last hop of a redirect chain
		where = resp.Request.Method + " " + safeURL(resp.Request.URL)
	}
	msg := fmt.Sprintf("%s answered %s", where, strings.TrimSpace(strconv.Itoa(status)+" "+nethttp.StatusText(status)))
	if r.expect != nil {
		want := make([]string, len(r.expect))
		for i, sr := range r.expect {
			want[i] = sr.String()
		}
		msg += ", not one of expect_status " + strings.Join(want, ", ")
	}
	details := map[string]any{
		"status":      status,
		"duration_ms": elapsed.Milliseconds(),
		"url":         safeURL(r.req.URL),
		"headers":     maskedHeaders(resp.Header, call.Redact),
	}
	if resp.Request != nil && safeURL(resp.Request.URL) != safeURL(r.req.URL) {
		details["final_url"] = safeURL(resp.Request.URL)
	}
	if len(body) > maxErrorBody {
		details["body"] = string(trimPartialRune(body[:maxErrorBody]))
		details["body_truncated"] = true
	} else {
		details["body"] = decodeBody(resp.Header, body, false)
	}
	e := &node.Error{Code: "http_" + strconv.Itoa(status), Category: node.CategoryHTTPStatus, Message: msg, Details: details}
	switch {
	case status == nethttp.StatusRequestTimeout, status == nethttp.StatusTooManyRequests, status >= 500:
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), call.Now())
		if e.RetryAfter > 0 {
			details["retry_after_ms"] = e.RetryAfter.Milliseconds()
		}
	case status >= 400:
		e.Permanent = true
	}
	return e
}

// credentialHeaders are the response headers whose values are
// credentials whatever they hold.
var credentialHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "set-cookie": true,
	"x-api-key": true, "x-auth-token": true,
}

// maskedHeaders maps each response header's lower-case name to its first
// value, as the output's headers do, with the value of a credential
// header, and of any header that holds a secret's value (redact changes
// it), replaced by redact.Mask.
func maskedHeaders(h nethttp.Header, redactFn func(string) string) map[string]any {
	out := firstValues(h)
	for k, v := range out {
		s, _ := v.(string)
		if credentialHeaders[k] || redactFn != nil && redactFn(s) != s {
			out[k] = redact.Mask
		}
	}
	return out
}

// retryAfter reads a Retry-After header: a number of seconds or an HTTP
// date. It returns 0 when there is none or it is unreadable or past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 || n > int64(time.Duration(1<<63-1)/time.Second) {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := nethttp.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// requestError classifies a failure to get a response (or to read it):
// refused by the policy, timeout, cancellation, DNS, connection, TLS.
func requestError(r *request, err error, elapsed time.Duration) *node.Error {
	target, cause := r.req.URL, err
	if r.hop != nil {
		target = r.hop
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err // ue.Error() holds the URL with its query
	}
	where := r.req.Method + " " + safeURL(target)
	details := map[string]any{"url": safeURL(r.req.URL), "duration_ms": elapsed.Milliseconds()}
	if safeURL(target) != safeURL(r.req.URL) {
		details["final_url"] = safeURL(target)
	}
	e := &node.Error{Err: err, Details: details}
	set := func(category, code string, permanent bool, format string, args ...any) *node.Error {
		e.Category, e.Code, e.Permanent = category, code, permanent
		e.Message = where + ": " + fmt.Sprintf(format, args...)
		return e
	}
	var (
		blocked *BlockedError
		dnsErr  *net.DNSError
		opErr   *net.OpError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &blocked):
		details["address"] = blocked.Addr.String()
		if blocked.Port != 0 {
			details["address"] = netip.AddrPortFrom(blocked.Addr, blocked.Port).String()
		}
		details["reason"] = blocked.Reason
		return set(node.CategoryConnection, "ssrf_blocked", true, "%s", blocked.Error())
	case errors.Is(err, context.Canceled):
		return set(node.CategoryCancelled, "cancelled", false, "cancelled after %s", elapsed.Round(time.Millisecond))
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return set(node.CategoryTimeout, "timeout", false, "timed out after %s", elapsed.Round(time.Millisecond))
	case errors.Is(err, errTooManyRedirects):
		return set(node.CategoryExecution, "too_many_redirects", true, "%v", errTooManyRedirects)
	case errors.As(err, &dnsErr):
		return set(node.CategoryConnection, "dns", false, "cannot resolve host %s: %s", dnsErr.Name, dnsErr.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return set(node.CategoryConnection, "connection_refused", false, "connection refused")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return set(node.CategoryConnection, "connection_reset", false, "the connection was closed before the response was complete")
	case isTLSError(err):
		return set(node.CategoryConnection, "tls", true, "TLS: %v", cause)
	case errors.As(err, &opErr):
		return set(node.CategoryConnection, "connection", false, "%v", opErr)
	}
	return set(node.CategoryExecution, "request_failed", false, "%v", cause)
}

// isTLSError reports a certificate or handshake failure, which retrying will
// not mend.
func isTLSError(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		certBad  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		alert    tls.AlertError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) ||
		errors.As(err, &certBad) || errors.As(err, &record) || errors.As(err, &alert)
}
