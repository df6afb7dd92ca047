package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skeinhq/skein/node"
)

// Error categories of model calls. Errors from Provider.Chat and ChatJSON
// are *node.Error values with one of these categories (or node's
// validation, connection and cancelled categories).
const (
	// CategoryRateLimit: the endpoint answered 429 (after retries).
	CategoryRateLimit = "llm_rate_limit"
	// CategoryHTTP: any other HTTP error status, or a broken stream.
	CategoryHTTP = "llm_http"
	// CategoryTimeout: the call's deadline passed.
	CategoryTimeout = "llm_timeout"
	// CategoryMalformed: a reply that is not what the API promises (not
	// JSON, no choices), or a JSON reply that does not match the schema
	// asked for.
	CategoryMalformed = "llm_malformed"
	// CategoryAuthentication: 401 or 403; never retried.
	CategoryAuthentication = "authentication"

	categoryValidation = node.CategoryValidation
)

// MaxErrorBody is how much of an error reply's body is kept in an error's
// details.
const MaxErrorBody = 2 << 10

// StatusError is an HTTP reply with an error status, as Guard returns it
// to the SDK.
type StatusError struct {
	Status int
	Header http.Header
	// Body is the start of the reply's body.
	Body []byte
}

func (e *StatusError) Error() string {
	msg := apiMessage(e.Body)
	if msg == "" {
		return fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), msg)
}

// MalformedError is a reply that is not what the API promises.
type MalformedError struct {
	Status int
	Body   []byte
	Err    error
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("malformed reply: %v", e.Err)
}

func (e *MalformedError) Unwrap() error { return e.Err }

// Malformedf returns a MalformedError for a reply that decoded but makes no
// sense (a completion without choices).
func Malformedf(format string, args ...any) error {
	return &MalformedError{Err: fmt.Errorf(format, args...)}
}

// StreamError describes an error that ended an event stream: an event
// that is not JSON becomes a *MalformedError.
func StreamError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return &MalformedError{Err: fmt.Errorf("a stream event is not valid JSON: %w", err)}
	}
	return err
}

// Guard is a middleware for the SDKs' HTTP clients (it has the type of both
// openai-go's and anthropic-sdk-go's option.Middleware). It turns an error
// status into a *StatusError and a successful reply whose body is not JSON
// into a *MalformedError, so every provider classifies failures the same way,
// whatever the SDK makes of them. Event streams pass through untouched.
func Guard(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil {
		return res, err
	}
	if res.StatusCode >= 400 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		res.Body.Close()
		return nil, &StatusError{Status: res.StatusCode, Header: res.Header, Body: body}
	}
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		return res, nil
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	if !json.Valid(body) {
		return nil, &MalformedError{Status: res.StatusCode, Body: body, Err: errors.New(describeInvalidJSON(body))}
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	res.Header.Set("Content-Type", "application/json")
	return res, nil
}

func describeInvalidJSON(body []byte) string {
	if len(bytes.TrimSpace(body)) == 0 {
		return "the body is empty, not JSON"
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "the body is not JSON: " + err.Error()
	}
	return "the body is not JSON"
}

// Classify turns an error from an SDK call into a *node.Error with one of
// this package's categories. provider prefixes the message ("openai: …").
// A *node.Error is returned as it is.
func Classify(provider string, err error) *node.Error {
	if err == nil {
		return nil
	}
	var ne *node.Error
	if errors.As(err, &ne) {
		return ne
	}
	var se *StatusError
	var me *MalformedError
	var se2 *json.SyntaxError
	var te *json.UnmarshalTypeError
	var nerr net.Error
	switch {
	case errors.As(err, &se):
		return statusError(provider, se)
	case errors.As(err, &me):
		e := failf(CategoryMalformed, "%s: %v", provider, me)
		e.Err = err
		if me.Body != nil {
			e.Details = map[string]any{"status": me.Status, "body": clip(me.Body)}
		}
		return e
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		e := failf(CategoryTimeout, "%s: the model did not answer in time: %v", provider, err)
		e.Err = err
		return e
	case errors.Is(err, context.Canceled):
		e := failf(node.CategoryCancelled, "%s: %v", provider, err)
		e.Err = err
		return e
	case errors.As(err, &se2), errors.As(err, &te):
		e := failf(CategoryMalformed, "%s: malformed reply: %v", provider, err)
		e.Err = err
		return e
	case errors.As(err, &nerr):
		e := failf(node.CategoryConnection, "%s: %v", provider, err)
		e.Err = err
		return e
	}
	e := failf(CategoryHTTP, "%s: %v", provider, err)
	e.Err = err
	return e
}

func statusError(provider string, se *StatusError) *node.Error {
	cat := CategoryHTTP
	what := "request failed"
	switch {
	case se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden:
		cat, what = CategoryAuthentication, "authentication failed"
	case se.Status == http.StatusTooManyRequests:
		cat, what = CategoryRateLimit, "rate limited"
	case se.Status == http.StatusRequestTimeout || se.Status == http.StatusGatewayTimeout:
		cat, what = CategoryTimeout, "timed out"
	case se.Status >= 500:
		what = "server error"
	}
	e := failf(cat, "%s: %s (%v)", provider, what, se)
	e.Err = se
	e.Details = map[string]any{"status": se.Status, "body": clip(se.Body)}
	if d, ok := RetryAfter(se.Header); ok {
		e.RetryAfter = d
		e.Details["retry_after_seconds"] = d.Seconds()
	}
	// A client error other than a rate limit or a timeout will fail the
	// same way again.
	e.Permanent = se.Status < 500 && cat != CategoryRateLimit && cat != CategoryTimeout
	return e
}

// retryable reports whether an error is worth another attempt in process:
// rate limits and server errors.
func retryable(e *node.Error) bool {
	var se *StatusError
	if !errors.As(e, &se) {
		return false
	}
	return se.Status == http.StatusTooManyRequests || se.Status >= 500
}

// RetryAfter reads how long a reply asks the client to wait: the
// Retry-After-Ms header (milliseconds, sent by OpenAI), else Retry-After in
// seconds or as an HTTP date.
func RetryAfter(h http.Header) (time.Duration, bool) {
	return retryAfterAt(h, time.Now())
}

func retryAfterAt(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// apiMessage pulls the human message out of an error body: both APIs put it
// at error.message.
func apiMessage(body []byte) string {
	var v struct {
		Error json.RawMessage `json:"error"`
		// Some OpenAI-compatible servers answer {"message": …} or
		// {"error": "…"}.
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var inner struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(v.Error, &inner) == nil && inner.Message != "" {
		return inner.Message
	}
	var s string
	if json.Unmarshal(v.Error, &s) == nil && s != "" {
		return s
	}
	return v.Message
}

func clip(b []byte) string {
	if len(b) > MaxErrorBody {
		b = b[:MaxErrorBody]
	}
	return strings.ToValidUTF8(string(b), "")
}

func failf(category, format string, args ...any) *node.Error {
	return node.Failf(category, category, format, args...)
}
