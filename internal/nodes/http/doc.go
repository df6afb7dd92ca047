// Package http calls URLs: method, headers, query, a JSON, text or form
// body, auth, redirects and expected statuses.
//
// A node of the http kind sends one request and returns
// {status, headers, body, truncated}. headers holds the first value of each
// response header under its lower-case name. body is the parsed value when
// the response is JSON (a JSON Content-Type, or an object or array whatever
// the Content-Type says), else the text. At most max_body bytes are kept; a
// longer body is cut, truncated is true and an output_truncated event is
// recorded.
//
// A status outside expect_status (default: any 2xx) fails the node with a
// node.Error of category http_status and code http_<status>, whose Details
// hold the status, the start of the body, the response headers (first
// values under lower-case names; Authorization, Cookie, Set-Cookie and the
// like, and any header that holds a secret's value, masked), the duration
// and the URL (without its query string or user info, which often carry
// secrets). 408, 429 and
// 5xx answers may be retried, no sooner than the server's Retry-After; other
// 4xx answers are permanent. Timeouts fail with category timeout, network
// failures with category connection, and a bad URL or parameter with
// category validation (permanent).
//
// A 2xx answer whose JSON body says the API refused — a "status" of 400
// or more, "ok": false, "success": false or a GraphQL "errors" list
// (package apierr) — succeeds, with a warning event of category
// api_warning that names the node and what the body said.
//
// Requests other than GET and HEAD carry an Idempotency-Key header set to
// the step's idempotency key (run/node/visit), the same on every attempt, so
// a server can drop a request it has already seen (DESIGN §3). A header the
// workflow sets itself wins.
//
// The host may restrict where requests go by handing the kind a Policy under
// the service key ServicePolicy. With DenyPrivate set, the check happens in
// the dialer on the resolved address, so neither a hostname that resolves to
// a private address, nor DNS rebinding, nor a redirect gets around it.
//
// Connections are pooled: every call with the same Policy shares one
// transport.
package http
