package llm

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strings"
)

// WholeReply catches the answer of a server that ignores a request's
// stream flag: a successful response whose Content-Type is JSON (one whole
// reply object) rather than text/event-stream. Install Catch as a
// middleware of the streamed request only; after the stream ends, Body
// holds that JSON (nil when the server streamed) and the SDK's stream
// decoder has seen an empty event stream in its place, so the provider
// reads Body with the SDK's type for a whole reply.
type WholeReply struct {
	Body []byte
}

// Catch is the middleware (the signature of both SDKs' option.Middleware).
// Error statuses pass through untouched, for Guard to read.
func (w *WholeReply) Catch(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode < 200 || res.StatusCode >= 300 || !isJSON(res.Header.Get("Content-Type")) {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	w.Body = body
	res.Body = io.NopCloser(bytes.NewReader(nil))
	res.ContentLength = 0
	res.Header.Set("Content-Type", "text/event-stream")
	return res, nil
}

// isJSON reports whether a Content-Type is application/json or a
// +json type.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
