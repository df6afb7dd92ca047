package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/nodes/trigger"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/reqbody"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
)

// hookPrefix starts the paths of the webhook routes, which authenticate
// each request by the trigger's own auth, never by an API token.
const hookPrefix = "/hooks/"

// hookMethods are the methods a trigger.webhook may accept.
var hookMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// hookRoutes are the webhook routes: one per method a hook may accept.
func (s *Server) hookRoutes() []Route {
	var out []Route
	for _, m := range hookMethods {
		out = append(out, Route{Method: m, Path: hookPrefix + "{workflow}/{trigger}", h: s.hook})
	}
	return out
}

// HookAccepted is the answer of a webhook that started a run: 202 at once,
// or with respond: on_finish when the run did not end in time.
type HookAccepted struct {
	ExecutionID string `json:"execution_id"`
	Workflow    string `json:"workflow"`
	Trigger     string `json:"trigger"`
	Status      string `json:"status"`
}

// RunResult is a run that ended, as a webhook with respond: on_finish and
// a chat message answer it.
type RunResult struct {
	ExecutionID string         `json:"execution_id"`
	Workflow    string         `json:"workflow"`
	Status      string         `json:"status"`
	Outputs     map[string]any `json:"outputs"`
	Error       *node.Error    `json:"error"` // null when it completed
}

// maxDeliveryID bounds a webhook-id or Idempotency-Key.
const maxDeliveryID = 255

// hook starts a run from a trigger.webhook node: it finds the trigger by
// its path, checks the request's method, size and auth, parses the body by
// its content type, and starts the run from that trigger with the request
// as the payload (body, headers without the auth headers, query, method).
// A delivery id (webhook-id, else Idempotency-Key) names the run: the same
// id again — even at the same instant — is 409 delivery_replayed and
// starts nothing.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) error {
	var m hookMetric
	err := s.takeHook(w, r, &m)
	if m.outcome == "" {
		m.outcome = hookOutcome(err)
	}
	s.cfg.Metrics.Webhook(m.workflow, m.trigger, m.outcome)
	return err
}

// hookMetric is how a delivery is counted in skein_webhook_deliveries_total:
// its workflow and trigger once they are known to be served (so requests
// cannot make series at will), and its outcome.
type hookMetric struct{ workflow, trigger, outcome string }

// hookOutcome is the outcome of a delivery, by the answer's problem.
func hookOutcome(err error) string {
	if err == nil {
		return "accepted"
	}
	switch p := problemOf(err); p.Code {
	case CodeDeliveryReplayed:
		return "duplicate"
	case CodeInvalidInputs, CodeInvalidBody, CodeUnsupportedMediaType, CodeUsage:
		return CodeBadRequest
	default:
		return p.Code
	}
}

func (s *Server) takeHook(w http.ResponseWriter, r *http.Request, m *hookMetric) error {
	e, err := s.entry(r.PathValue("workflow"))
	if err != nil {
		return err
	}
	hk, err := s.hookOf(e, r.PathValue("trigger"))
	if err != nil {
		return err
	}
	m.workflow, m.trigger = e.Name, hk.node
	if r.Method != hk.cfg.Method {
		w.Header().Set("Allow", hk.cfg.Method)
		return problemf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "the hook %s takes %s requests", r.URL.Path, hk.cfg.Method)
	}
	if hk.err == nil {
		// The secrets may have gone since the hooks were built (a
		// secrets file is read by every run).
		if _, err := s.cfg.Runner.Secrets(e.W, s.cfg.Options.SecretsFile); err != nil {
			s.log.Error("webhook cannot take requests; set its secret", "workflow", e.Name, "file", e.File, "trigger", hk.node, "err", err)
			return hookUnavailable(r)
		}
	}
	if hk.err != nil {
		return hookUnavailable(r)
	}
	if hk.cfg.Auth == "" {
		return hookProblem(http.StatusForbidden, CodeForbidden, "The webhook has no auth, so it takes no requests",
			"the hook %s has no auth, so it takes no requests; give trigger %s an auth: hmac, bearer, or none (to let anyone in)", r.URL.Path, hk.node)
	}
	if hk.cfg.Auth == trigger.AuthBearer && !hk.bearerOK(r) {
		return hookProblem(http.StatusUnauthorized, CodeUnauthorized, "A valid webhook secret is required",
			"a bearer secret is required (%s)", hk.bearerWhere())
	}
	if r.ContentLength > hk.cfg.MaxBody {
		return problemf(http.StatusRequestEntityTooLarge, CodeTooLarge, "the request body is larger than %d bytes", hk.cfg.MaxBody)
	}
	raw, err := readBody(w, r, hk.cfg.MaxBody)
	if err != nil {
		return err
	}
	if hk.cfg.Auth == trigger.AuthHMAC {
		if err := hk.verifier.Verify(raw, r.Header); err != nil {
			if errors.Is(err, standardwebhooks.ErrMessageTooOld) || errors.Is(err, standardwebhooks.ErrMessageTooNew) {
				m.outcome = "expired"
			}
			return hookProblem(http.StatusUnauthorized, CodeUnauthorized, "A valid webhook signature is required", "%s", signatureProblem(err))
		}
	}
	deliveryID := r.Header.Get(standardwebhooks.HeaderWebhookID)
	if deliveryID == "" {
		deliveryID = r.Header.Get("Idempotency-Key")
	}
	if len(deliveryID) > maxDeliveryID {
		return problemf(http.StatusBadRequest, CodeBadRequest, "the delivery id (webhook-id or Idempotency-Key) is longer than %d bytes", maxDeliveryID)
	}
	body, err := reqbody.Parse(r.Header.Get("Content-Type"), raw)
	if err != nil {
		return err
	}
	inputs, err := e.W.ResolveInputs(map[string]any{})
	if err != nil {
		return problemf(http.StatusUnprocessableEntity, CodeInvalidInputs, "workflow %s cannot start from a webhook: %v (a webhook gives no inputs; give them defaults)", e.Name, err)
	}
	payload := map[string]any{
		"body":    body,
		"headers": hookHeaders(r.Header, hk.cfg),
		"query":   reqbody.Values(r.URL.Query()),
		"method":  r.Method,
	}

	runID := ""
	if deliveryID != "" {
		runID = hookRunID(e.Name, hk.node, deliveryID)
		// One delivery id makes one run: the run's id is made from it, and
		// creating a run whose id exists fails (runner.ErrExists) before it
		// runs anything. The lock keeps two requests of this process for
		// one id in line, so the second finds the first's run.
		unlock := s.keys.lock(runID)
		defer unlock()
	}
	run, err := s.launch(withSource(r.Context(), SourceWebhook), "run started by webhook", func(ctx context.Context, o runner.Options) (*runner.Result, error) {
		// A run that answers at once is left to the queue's workers once
		// recorded, when the runs go there: the server holds no execution
		// slot for it, and accepted runs drain at the workers' pace.
		return s.cfg.Runner.Start(ctx, runner.StartRequest{Workflow: e.W, Inputs: inputs, Trigger: hk.node, Payload: payload, RunID: runID,
			Detach: hk.cfg.Respond != trigger.RespondOnFinish, Options: o})
	})
	if errors.Is(err, runner.ErrExists) && runID != "" {
		return replayed(w, runID) // another process took the delivery meanwhile
	}
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/runs/"+run.ID)
	if hk.cfg.Respond == trigger.RespondOnFinish {
		if done := s.waitEnd(r.Context(), run.ID, hk.cfg.RespondTimeout); done != nil {
			res := resultOf(done)
			res.Outputs = s.paths.Values(res.Outputs)
			writeJSON(w, http.StatusOK, res)
			return nil
		}
	}
	writeJSON(w, http.StatusAccepted, HookAccepted{ExecutionID: run.ID, Workflow: e.Name, Trigger: hk.node, Status: "running"})
	return nil
}

// hookUnavailable answers a request to a hook whose secrets the server
// lacks. What is missing is the operator's to know (the server's log and
// problems name it); the caller learns only that something is.
func hookUnavailable(r *http.Request) *Problem {
	return problemf(http.StatusServiceUnavailable, CodeWebhookUnavailable,
		"the hook %s cannot take requests: the server lacks its configuration; the server's log says what to set", r.URL.Path)
}

// hookProblem is a problem of a webhook request with a title of its own:
// a webhook's auth is its trigger's secret or signature, not an API token.
func hookProblem(status int, code, title, format string, args ...any) *Problem {
	p := problemf(status, code, format, args...)
	p.Title = title
	return p
}

// signatureProblem says why a Standard Webhooks signature was refused.
func signatureProblem(err error) string {
	switch {
	case errors.Is(err, standardwebhooks.ErrRequiredHeaders), errors.Is(err, standardwebhooks.ErrInvalidHeaders):
		return "sign the request in the Standard Webhooks scheme: webhook-id, webhook-timestamp (Unix seconds) and webhook-signature (v1,<base64 HMAC-SHA256 of id.timestamp.body>)"
	case errors.Is(err, standardwebhooks.ErrMessageTooOld), errors.Is(err, standardwebhooks.ErrMessageTooNew):
		return "webhook-timestamp is more than 5 minutes away from the server's clock"
	}
	return "webhook-signature does not match the body (none of its v1 signatures is the HMAC-SHA256 of id.timestamp.body with the hook's secret)"
}

// replayed answers a delivery id that started a run already.
func replayed(w http.ResponseWriter, runID string) error {
	w.Header().Set("Location", "/api/runs/"+runID)
	p := problemf(http.StatusConflict, CodeDeliveryReplayed, "this delivery id started run %s already; a delivery makes one run", runID)
	p.ExecutionID = runID
	return p
}

// hookRunID is the id of the run a delivery starts: derived from the
// workflow, the trigger and the delivery id, so the store's unique run id
// makes one run per delivery, across processes too.
func hookRunID(workflowName, nodeID, deliveryID string) string {
	sum := sha256.Sum256([]byte("skein webhook\x00" + workflowName + "\x00" + nodeID + "\x00" + deliveryID))
	return hex.EncodeToString(sum[:6])
}

// authHeaders never reach a run: they carry credentials.
var authHeaders = []string{"authorization", "proxy-authorization", "cookie", standardwebhooks.HeaderWebhookSignature}

// hookHeaders are the request's headers as a run sees them: lower-case
// names, values joined by ", ", without the headers that carry
// credentials (the hook's own bearer header included).
func hookHeaders(h http.Header, cfg trigger.Hook) map[string]any {
	out := make(map[string]any, len(h))
	bearer := strings.ToLower(cfg.Header)
	for k, vs := range h {
		name := strings.ToLower(k)
		if name == bearer || contains(authHeaders, name) {
			continue
		}
		out[name] = strings.Join(vs, ", ")
	}
	return out
}

// waitEnd waits until a run ends, for at most timeout; nil when it did
// not end in time (or the client left, or the server stops).
func (s *Server) waitEnd(ctx context.Context, id string, timeout time.Duration) *record.Run {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(s.cfg.EventPoll)
	defer poll.Stop()
	for {
		wake := s.hub.wait(id)
		run, err := s.cfg.Runner.Lookup(ctx, id)
		if err == nil && !live(run.Status) {
			s.hub.forget(id, wake)
			return run
		}
		select {
		case <-wake:
		case <-poll.C:
		case <-deadline.C:
			s.hub.forget(id, wake)
			return nil
		case <-ctx.Done():
			s.hub.forget(id, wake)
			return nil
		case <-s.closing:
			s.hub.forget(id, wake)
			return nil
		}
	}
}

func resultOf(run *record.Run) RunResult {
	out := run.Outputs
	if out == nil {
		out = map[string]any{}
	}
	return RunResult{ExecutionID: run.ID, Workflow: run.Workflow, Status: string(run.Status), Outputs: out, Error: run.Error}
}

// hookSpec is a webhook trigger as the server checks requests against it.
type hookSpec struct {
	node string
	cfg  trigger.Hook
	// verifier checks Standard Webhooks signatures (auth hmac).
	verifier *standardwebhooks.Webhook
	// bearer is the SHA-256 of the bearer secret (auth bearer).
	bearer [sha256.Size]byte
	// err is why the hook cannot take requests (its secret is not set),
	// for the operator: it may name the variable to set.
	err error
}

// bearerOK compares the request's bearer secret with the hook's in
// constant time (of their SHA-256, so the length leaks nothing either).
func (h *hookSpec) bearerOK(r *http.Request) bool {
	var got string
	if h.cfg.Header != "" {
		got = r.Header.Get(h.cfg.Header)
	} else {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return false
		}
		got = strings.TrimSpace(tok)
	}
	sum := sha256.Sum256([]byte(got))
	return got != "" && subtle.ConstantTimeCompare(sum[:], h.bearer[:]) == 1
}

func (h *hookSpec) bearerWhere() string {
	if h.cfg.Header != "" {
		return "in the header " + h.cfg.Header
	}
	return "as Authorization: Bearer <secret>"
}

// hookCache holds the hooks of the served workflows, built on first use
// (their secrets rendered once), for one catalog: a reload starts a new
// cache. Tables are kept by entry, so a request that looked its workflow
// up just before a reload gets the hooks of what it looked up.
type hookCache struct {
	c  *Catalog
	mu sync.Mutex
	m  map[*Entry]map[string]*hookSpec // path → hook
}

// hookOf returns the webhook trigger of a served workflow that has path.
func (s *Server) hookOf(e *Entry, path string) (*hookSpec, error) {
	c := s.Catalog()
	hc := s.hooks.Load()
	if hc == nil || hc.c != c {
		fresh := &hookCache{c: c, m: map[*Entry]map[string]*hookSpec{}}
		if s.hooks.CompareAndSwap(hc, fresh) {
			hc = fresh
		} else {
			hc = s.hooks.Load()
		}
	}
	hc.mu.Lock()
	table, ok := hc.m[e]
	if !ok {
		table = s.buildHooks(e)
		hc.m[e] = table
	}
	hc.mu.Unlock()
	if h := table[path]; h != nil {
		return h, nil
	}
	var paths []string
	for p := range table {
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		return nil, problemf(http.StatusNotFound, CodeNotFound, "workflow %s has no trigger.webhook", e.Name)
	}
	return nil, problemf(http.StatusNotFound, CodeNotFound, "workflow %s has no webhook %q", e.Name, path)
}

// buildHooks reads the webhook triggers of a workflow and renders their
// secrets. The first trigger with a path takes it.
func (s *Server) buildHooks(e *Entry) map[string]*hookSpec {
	table := map[string]*hookSpec{}
	var secrets map[string]string
	var secretsErr error
	loaded := false
	for _, n := range e.W.Nodes {
		if n.Type != trigger.Webhook || n.Disabled {
			continue
		}
		cfg, _ := trigger.ParseWebhook(n.ID, n.Params)
		if table[cfg.Path] != nil {
			s.log.Warn("two webhooks have one path; the first is served", "workflow", e.Name, "path", cfg.Path, "node", n.ID)
			continue
		}
		h := &hookSpec{node: n.ID, cfg: cfg}
		table[cfg.Path] = h
		if !loaded {
			secrets, secretsErr = s.cfg.Runner.Secrets(e.W, s.cfg.Options.SecretsFile)
			loaded = true
		}
		if secretsErr != nil { // a run of the workflow could not start
			h.err = fmt.Errorf("webhook %s of workflow %s answers 503 webhook_unavailable until the workflow's secrets are set: %w", n.ID, e.Name, secretsErr)
			s.log.Error("webhook cannot take requests; set its secret", "workflow", e.Name, "file", e.File, "trigger", n.ID, "err", secretsErr)
			continue
		}
		if cfg.Auth != trigger.AuthHMAC && cfg.Auth != trigger.AuthBearer {
			continue
		}
		secret, err := renderSecret(cfg.Secret, secrets)
		if err != nil {
			h.err = fmt.Errorf("webhook %s of workflow %s answers 503 webhook_unavailable until its secret is set: %w", n.ID, e.Name, err)
			s.log.Error("webhook cannot take requests; set its secret", "workflow", e.Name, "file", e.File, "trigger", n.ID, "err", err)
			continue
		}
		switch cfg.Auth {
		case trigger.AuthHMAC:
			if h.verifier, err = standardwebhooks.NewWebhook(secret); err != nil || !strings.HasPrefix(secret, "whsec_") {
				h.err = fmt.Errorf("webhook %s of workflow %s answers 503 webhook_unavailable until its secret is a Standard Webhooks secret (whsec_ then base64)", n.ID, e.Name)
				s.log.Error("webhook cannot take requests; set its secret", "workflow", e.Name, "file", e.File, "trigger", n.ID, "err", h.err)
			}
		case trigger.AuthBearer:
			h.bearer = sha256.Sum256([]byte(secret))
		}
	}
	return table
}

// renderSecret renders a hook's secret, a template that may read the
// workflow's secrets.
func renderSecret(tmpl string, secrets map[string]string) (string, error) {
	if !expr.HasTemplate(tmpl) {
		return tmpl, nil
	}
	scope := &expr.Scope{Secrets: make(map[string]any, len(secrets))}
	for k, v := range secrets {
		scope.Secrets[k] = v
	}
	v, err := expr.RenderValue(tmpl, scope)
	if err != nil {
		return "", err
	}
	s, err := node.Text(v)
	if err != nil || s == "" {
		return "", errors.New("the secret renders empty")
	}
	return s, nil
}

// newHookCache builds the hooks of every workflow of c, rendering their
// secrets now, and returns them with the problems of the hooks that
// cannot take requests (in file and node order).
func (s *Server) newHookCache(c *Catalog) (*hookCache, []FileProblem) {
	hc := &hookCache{c: c, m: make(map[*Entry]map[string]*hookSpec, len(c.Workflows))}
	var problems []FileProblem
	for _, e := range c.Workflows {
		table := s.buildHooks(e)
		hc.m[e] = table
		byNode := make(map[string]*hookSpec, len(table))
		for _, h := range table {
			byNode[h.node] = h
		}
		for _, n := range e.W.Nodes {
			if h := byNode[n.ID]; h != nil && h.err != nil {
				problems = append(problems, FileProblem{File: e.File, Node: n.ID, Message: h.err.Error()})
			}
		}
	}
	return hc, problems
}
