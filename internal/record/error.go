package record

import (
	"encoding/json"
	"fmt"

	"github.com/skeinhq/skein/node"
)

// categoryToolError is the category of an MCP tool that answered with an
// error (internal/mcp's CategoryToolError): the tool was called wrongly.
const categoryToolError = "mcp_tool_error"

// ErrorContext returns e with the context every recorded error carries:
// the node it happened in (nodeID; "" keeps e's own), its source (unless
// e names one, from its category: template, validation, else runtime) and
// whether an edit
// of the workflow may fix it (Fixable). e is not changed: the result is a
// copy, or e itself when it carries that context already. nil gives nil.
func ErrorContext(nodeID string, e *node.Error) *node.Error {
	if e == nil {
		return nil
	}
	c := *e
	if nodeID != "" {
		c.Node = nodeID
	}
	if c.Source == "" {
		c.Source = ErrorSource(e.Category)
	}
	c.Fixable = Fixable(e)
	if c.Node == e.Node && c.Source == e.Source && c.Fixable == e.Fixable {
		return e
	}
	return &c
}

// ErrorSource is the source of an error of the given category.
func ErrorSource(category string) string {
	switch category {
	case node.CategoryTemplate:
		return node.SourceTemplate
	case node.CategoryValidation:
		return node.SourceValidation
	}
	return node.SourceRuntime
}

// Fixable reports whether an edit of the workflow may cure e — the rule
// skein run --auto-repair follows: template, validation and
// execution_failure errors, an MCP tool's error, and an HTTP 4xx other
// than 401 and 403 (credentials), 408 and 429 (wait and try again). Not
// fixable are the others: timeouts, connection failures, server errors,
// authentication and budget errors, cancels and Skein's own failures,
// which waiting, credentials or limits cure rather than an edit.
func Fixable(e *node.Error) bool {
	if e == nil {
		return false
	}
	switch e.Category {
	case node.CategoryTemplate, node.CategoryValidation, node.CategoryExecution, categoryToolError:
		return true
	case node.CategoryHTTPStatus:
		switch status := HTTPStatus(e); status {
		case 401, 403, 408, 429:
			return false
		default:
			return status >= 400 && status < 500
		}
	}
	return false
}

// HTTPStatus reads the status of an http_status error: Details.status,
// else the code http_<status>; 0 when it has none.
func HTTPStatus(e *node.Error) int {
	if e.Details != nil {
		switch s := e.Details["status"].(type) {
		case int:
			return s
		case int64:
			return int(s)
		case float64:
			return int(s)
		case json.Number:
			n, _ := s.Int64()
			return int(n)
		}
	}
	var n int
	if _, err := fmt.Sscanf(e.Code, "http_%d", &n); err == nil {
		return n
	}
	return 0
}
