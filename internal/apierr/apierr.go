// Package apierr finds an API's refusal in an answer that succeeded: a
// 2xx response, or an MCP tool's result, that says `"ok": false`,
// `"success": false`, a `"status"` of 400 or more, or carries a non-empty
// GraphQL `errors` list (DESIGN §4). Such a business error is the API
// saying no to a well-formed request: the node succeeds, the http kind
// records a warning event of category api_warning, and --auto-repair
// lists it as a warning and never repairs it.
package apierr

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Category is the category of the warning event a business error gives.
const Category = "api_warning"

// InOutput finds a business error in a node's output: in an http output's
// body, or at the top of an mcp output. The top-level success and status
// of an output are Skein's (the scheduler's, the HTTP status) and are not
// read there.
func InOutput(output map[string]any) (string, bool) {
	if body, ok := output["body"].(map[string]any); ok {
		if msg, ok := InBody(body); ok {
			return msg, true
		}
	}
	return find(output, false)
}

// InBody finds a business error in a response's decoded JSON body: an
// object whose ok or success is false, whose status is a number of 400 or
// more, or whose errors is a non-empty list (GraphQL). It returns the
// message to show, with the reason the body gives when it gives one.
func InBody(body any) (string, bool) {
	m, ok := body.(map[string]any)
	if !ok {
		return "", false
	}
	return find(m, true)
}

func find(m map[string]any, body bool) (string, bool) {
	var what string
	switch {
	case m["ok"] == false:
		what = `"ok": false`
	case body && m["success"] == false:
		what = `"success": false`
	case body && statusOf(m["status"]) >= 400:
		what = fmt.Sprintf(`"status": %d`, statusOf(m["status"]))
	default:
		if errs, ok := m["errors"].([]any); ok && len(errs) > 0 {
			msg := "GraphQL errors"
			if first, ok := errs[0].(map[string]any); ok {
				if s, ok := first["message"].(string); ok && s != "" {
					msg += ": " + clip(s, 200)
				}
			}
			if len(errs) > 1 {
				msg += fmt.Sprintf(" (and %d more)", len(errs)-1)
			}
			return "the API answered " + msg, true
		}
		return "", false
	}
	for _, k := range []string{"error", "message", "description", "reason", "msg"} {
		switch v := m[k].(type) {
		case string:
			if v != "" {
				return fmt.Sprintf("the API answered %s (%s: %s)", what, k, clip(v, 200)), true
			}
		case map[string]any:
			if s, ok := v["message"].(string); ok && s != "" {
				return fmt.Sprintf("the API answered %s (%s: %s)", what, k, clip(s, 200)), true
			}
		}
	}
	return "the API answered " + what, true
}

// statusOf reads a status that is a whole number; 0 otherwise (a text
// status such as "error" is not one).
func statusOf(v any) int {
	switch s := v.(type) {
	case int:
		return s
	case int64:
		return int(s)
	case float64:
		if s == float64(int(s)) {
			return int(s)
		}
	case json.Number:
		if n, err := s.Int64(); err == nil {
			return int(n)
		}
	}
	return 0
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return strings.TrimSpace(s[:cut]) + " …(truncated)"
}
