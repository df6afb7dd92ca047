package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"time"

	"github.com/skeinhq/skein/internal/apierr"
	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/node"
)

// HTTP runs nodes of the http kind. It keeps no state of its own: the
// connection pools it uses are shared per Policy across every node.
type HTTP struct{}

var _ node.Kind = (*HTTP)(nil)

// Run sends the request the node's parameters describe and returns
// {status, headers, body, truncated}. The request ends when ctx does (the
// node's timeout). A status outside expect_status fails with an http_status
// error; see the package documentation for the other failures.
func (*HTTP) Run(ctx context.Context, call *node.Call) (map[string]any, error) {
	pol, err := policyFrom(call.Services)
	if err != nil {
		return nil, err
	}
	r, err := newRequest(ctx, call)
	if err != nil {
		return nil, err
	}
	var rt nethttp.RoundTripper = transportFor(pol)
	if tape, ok := cassette.Service.Lookup(call.Services); ok {
		rt = tape.Transport(rt) // recorded, or answered by a replay
	}
	client := &nethttp.Client{Transport: rt, CheckRedirect: r.checkRedirect}
	start := time.Now()
	resp, err := client.Do(r.req)
	if err != nil {
		return nil, requestError(r, err, time.Since(start))
	}
	defer resp.Body.Close()
	body, truncated, err := readBody(resp.Body, r.maxBody)
	elapsed := time.Since(start)
	if err != nil {
		return nil, requestError(r, err, elapsed)
	}
	if !r.expected(resp.StatusCode) {
		return nil, statusError(r, resp, body, elapsed, call)
	}
	if truncated {
		ev := map[string]any{"port": "body", "limit_bytes": r.maxBody, "url": safeURL(resp.Request.URL)}
		if resp.ContentLength > 0 {
			ev["content_length"] = resp.ContentLength
		}
		call.Emit("output_truncated", ev)
	}
	decoded := decodeBody(resp.Header, body, truncated)
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if msg, refused := apierr.InBody(decoded); refused {
			call.Emit("warning", map[string]any{
				"category": apierr.Category,
				"message": fmt.Sprintf("node %s: %s; the step succeeds, as the status was %d: check the body, or fail on it with a condition",
					call.NodeID, call.Redact(msg), resp.StatusCode),
				"status": resp.StatusCode,
				"url":    safeURL(resp.Request.URL),
			})
		}
	}
	return map[string]any{
		"status":    resp.StatusCode,
		"headers":   firstValues(resp.Header),
		"body":      decoded,
		"truncated": truncated,
	}, nil
}
