package trigger

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/skeinhq/skein/node"
)

// Auth types of a webhook.
const (
	AuthHMAC   = "hmac"   // Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature
	AuthBearer = "bearer" // a shared secret in Authorization: Bearer (or in Header)
	AuthNone   = "none"   // anyone may call; must be written explicitly
)

// Respond modes of a webhook.
const (
	RespondAccepted = "accepted"  // 202 with the run id as soon as it is recorded
	RespondOnFinish = "on_finish" // the run's outputs once it ends (202 after RespondTimeout)
)

// Limits of a webhook's parameters.
const (
	DefaultMaxBody        = 1 << 20
	MaxMaxBody            = 16 << 20
	DefaultRespondTimeout = 30 * time.Second
	MaxRespondTimeout     = 5 * time.Minute
)

// Hook is a trigger.webhook node's configuration, read from its
// parameters by ParseWebhook: what the server checks a request against.
type Hook struct {
	// Path is the last part of the hook's URL, /hooks/{workflow}/{Path}.
	Path   string
	Method string
	// Auth is AuthHMAC, AuthBearer or AuthNone; "" when the node has no
	// auth parameter, and then every request is refused.
	Auth string
	// Secret is the auth secret as written: usually a template that reads
	// a secret ("{{ secrets.HOOK_SECRET }}"), rendered per request.
	Secret string
	// Header carries a bearer secret as it is, in place of
	// Authorization: Bearer.
	Header string
	// MaxBody bounds the request body, in bytes.
	MaxBody        int64
	Respond        string
	RespondTimeout time.Duration
}

// pathSegment is compiled on first use: most runs have no webhook.
var pathSegment = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._~-]+$`) })

// ParseWebhook reads a webhook node's parameters as written (id names the
// node, the default path). Every problem is reported, each with the
// parameter it is about; the Hook holds what could be read.
func ParseWebhook(id string, p map[string]any) (Hook, []node.ParamError) {
	h := Hook{Path: id, Method: "POST", MaxBody: DefaultMaxBody, Respond: RespondAccepted, RespondTimeout: DefaultRespondTimeout}
	var errs []node.ParamError
	bad := func(param, format string, args ...any) {
		errs = append(errs, node.ParamError{Param: param, Message: fmt.Sprintf(format, args...)})
	}
	if v, ok := p["path"].(string); ok && v != "" {
		h.Path = v
	}
	if !pathSegment().MatchString(h.Path) {
		bad("path", "path %s must be one URL segment of letters, digits, '.', '_', '~' and '-' (the hook is /hooks/{workflow}/{path})", quote(h.Path))
	}
	if v, ok := p["method"].(string); ok && v != "" {
		h.Method = strings.ToUpper(v)
	}
	if a, ok := p["auth"].(map[string]any); ok {
		for k := range a {
			if k != "type" && k != "secret" && k != "header" {
				bad("auth", "unknown key %s in auth (keys: type, secret, header)", k)
			}
		}
		h.Auth, _ = a["type"].(string)
		h.Secret, _ = a["secret"].(string)
		h.Header, _ = a["header"].(string)
		switch h.Auth {
		case AuthHMAC, AuthBearer:
			if h.Secret == "" {
				bad("auth", "auth type %s needs a secret, such as secret: \"{{ secrets.HOOK_SECRET }}\"", h.Auth)
			}
		case AuthNone:
			if h.Secret != "" || h.Header != "" {
				bad("auth", "auth type none takes no secret or header")
			}
		default:
			bad("auth", "auth.type must be hmac, bearer or none")
		}
		if h.Auth == AuthHMAC && h.Header != "" {
			bad("auth", "auth type hmac reads the Standard Webhooks headers webhook-id, webhook-timestamp and webhook-signature; header is for bearer")
		}
	} else if v, ok := p["auth"]; ok && v != nil { // null is no value, as for any parameter
		bad("auth", "auth must be a map {type, secret, header}")
	} else {
		errs = append(errs, node.ParamError{Param: "auth", Warning: true,
			Message: "the hook has no auth, so skein serve refuses every request to it; set auth: {type: hmac, secret: \"{{ secrets.HOOK_SECRET }}\"} or {type: bearer, …}, or auth: {type: none} to let anyone start runs"})
	}
	if v, ok := p["max_body"]; ok && v != nil {
		s, err := node.Text(v)
		n, perr := humanize.ParseBytes(s)
		switch {
		case err != nil || perr != nil:
			bad("max_body", "max_body %s is not a size (write e.g. 64KiB, 1MiB or a number of bytes)", quote(s))
		case n < 1 || n > MaxMaxBody:
			bad("max_body", "max_body must be from 1 byte to %s, not %s", humanize.IBytes(MaxMaxBody), humanize.IBytes(n))
		default:
			h.MaxBody = int64(n)
		}
	}
	if v, ok := p["respond"].(string); ok && v != "" {
		h.Respond = v
	}
	if v, ok := p["respond_timeout"]; ok && v != nil {
		s, _ := node.Text(v)
		d, err := node.ParseDuration(s)
		switch {
		case err != nil:
			bad("respond_timeout", "%v", err)
		case d <= 0 || d > MaxRespondTimeout:
			bad("respond_timeout", "respond_timeout must be more than 0 and at most %s", MaxRespondTimeout)
		default:
			h.RespondTimeout = d
		}
	}
	return h, errs
}
