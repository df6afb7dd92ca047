package http

import (
	"fmt"
	nethttp "net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/skeinhq/skein/node"
)

// Kind is the kind name.
const Kind = "http"

// Spec declares the http kind.
var Spec = node.Spec{
	Kind: Kind, Category: node.Action,
	Description: "Sends an HTTP request. The output is {status, headers, body, truncated}; JSON bodies are parsed. " +
		"Requests other than GET and HEAD carry the step's Idempotency-Key.",
	Params: []node.Param{
		{Name: "method", Type: node.String, Default: "GET", Enum: []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, Description: "HTTP method."},
		{Name: "url", Type: node.String, Required: true, Description: "The URL."},
		{Name: "query", Type: node.Map, Description: "Query parameters merged into the URL; a list sends the name once per value."},
		{Name: "headers", Type: node.Map, Description: "Request headers."},
		{Name: "json", Type: node.Any, Description: "A value sent as a JSON body (Content-Type: application/json)."},
		{Name: "body", Type: node.String, Description: "A text body (Content-Type: text/plain unless headers set one)."},
		{Name: "form", Type: node.Map, Description: "A form body (application/x-www-form-urlencoded)."},
		{Name: "auth", Type: node.Map, Description: "{type: bearer, token} or {type: basic, username, password}."},
		{Name: "follow_redirects", Type: node.Bool, Default: true, Description: "Follow 3xx redirects (at most 10)."},
		{Name: "expect_status", Type: node.List, Description: "Statuses that count as success, such as [200, 404] or [\"2xx\"] (default: any 2xx, and any 3xx when follow_redirects is false)."},
		{Name: "max_body", Type: node.Int, Default: 10 << 20, Description: "Bytes of response body kept; a longer body is cut and truncated is set."},
	},
	Outputs: []string{"status", "headers", "body", "truncated"},
	Check:   check,
}

func init() { node.MustRegister(Spec, func() node.Kind { return &HTTP{} }) }

// check validates what can be known before the run; values that hold
// templates are let through.
func check(p map[string]any) []node.ParamError {
	var errs []node.ParamError
	n := 0
	for _, k := range []string{"json", "body", "form"} {
		if _, ok := p[k]; ok {
			n++
		}
	}
	if n > 1 {
		errs = append(errs, node.ParamError{Param: "body", Message: "set at most one of json, body or form"})
	}
	if a, ok := p["auth"].(map[string]any); ok {
		before := len(errs)
		if typ, ok := a["type"].(string); ok && !isTemplate(typ) {
			switch strings.ToLower(typ) {
			case "bearer":
				if _, ok := a["token"]; !ok {
					errs = append(errs, node.ParamError{Param: "auth", Message: "bearer auth needs a token"})
				}
			case "basic":
				if _, ok := a["username"]; !ok {
					errs = append(errs, node.ParamError{Param: "auth", Message: "basic auth needs a username (and a password)"})
				}
			default:
				errs = append(errs, node.ParamError{Param: "auth", Message: "auth type must be bearer or basic"})
			}
		} else if _, ok := a["type"]; !ok {
			errs = append(errs, node.ParamError{Param: "auth", Message: "auth needs a type: bearer or basic"})
		}
		// What the run checks of auth written without templates.
		if len(errs) == before && !hasTemplate(a) {
			if err := setAuth(&nethttp.Request{Header: nethttp.Header{}}, a); err != nil {
				errs = append(errs, node.ParamError{Param: "auth", Message: err.Error()})
			}
		}
	}
	if list, ok := p["expect_status"].([]any); ok {
		if len(list) == 0 {
			errs = append(errs, node.ParamError{Param: "expect_status", Message: emptyExpect})
		}
		for _, v := range list {
			if s, ok := v.(string); ok && isTemplate(s) {
				continue
			}
			if _, ok := parseStatus(v); !ok {
				errs = append(errs, node.ParamError{Param: "expect_status", Message: "expect_status holds statuses from 100 to 599 (such as 200) or classes (such as \"2xx\")"})
				break
			}
		}
	}
	if n, err := (node.Param{Type: node.Int}).Coerce(p["max_body"]); err == nil && n != nil && n.(int) <= 0 {
		errs = append(errs, node.ParamError{Param: "max_body", Message: "max_body must be a positive number of bytes"})
	}
	// What the run checks of a value written without templates, the
	// same code checks here.
	if v, ok := p["url"]; ok && v != nil && !hasTemplate(v) {
		raw, _ := node.Text(v) // a url written as a number is its text
		if _, err := parseURL(raw, nil); err != nil {
			errs = append(errs, node.ParamError{Param: "url", Message: err.Error()})
		}
	}
	for _, name := range []string{"query", "form", "headers"} {
		m, ok := p[name].(map[string]any)
		if !ok || hasTemplate(m) {
			continue
		}
		var err error
		if name == "headers" {
			err = setHeaders(&nethttp.Request{Header: nethttp.Header{}}, m)
		} else {
			for k, v := range m {
				if _, err = values(name+"."+k, v); err != nil {
					break
				}
			}
		}
		if err != nil {
			errs = append(errs, node.ParamError{Param: name, Message: err.Error()})
		}
	}
	return append(errs, writtenCredentials(p)...)
}

// writtenCredentials warns of credentials written in the workflow file as
// they are — an auth token or password, an Authorization header, a
// password in the url: every run records its parameters, and only a
// secret's value is masked in them.
func writtenCredentials(p map[string]any) []node.ParamError {
	var warns []node.ParamError
	warn := func(param, what, instead string) {
		warns = append(warns, node.ParamError{Param: param, Warning: true, Message: fmt.Sprintf(
			"%s is written in the file, so every run records it unmasked; keep it in a secret (secrets: [API_TOKEN]) and write %s", what, instead)})
	}
	if a, ok := p["auth"].(map[string]any); ok {
		for _, k := range []string{"token", "password"} {
			if s, ok := a[k].(string); ok && s != "" && !isTemplate(s) {
				warn("auth", "the auth "+k, k+`: "{{ secrets.API_TOKEN }}"`)
			}
		}
	}
	if h, ok := p["headers"].(map[string]any); ok {
		for k, v := range h {
			if s, ok := v.(string); ok && s != "" && !isTemplate(s) &&
				(strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "Proxy-Authorization")) {
				warn("headers", "header "+k, k+`: "Bearer {{ secrets.API_TOKEN }}"`)
			}
		}
	}
	if s, ok := p["url"].(string); ok && !isTemplate(s) {
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if pw, set := u.User.Password(); set && pw != "" {
				warn("url", "the password in url", `auth: {type: basic, username: …, password: "{{ secrets.API_TOKEN }}"}`)
			}
		}
	}
	return warns
}

func isTemplate(s string) bool { return strings.Contains(s, "{{") }

// hasTemplate reports whether a value holds a template anywhere: it is
// known only at run time.
func hasTemplate(v any) bool {
	switch x := v.(type) {
	case string:
		return isTemplate(x)
	case []any:
		return slices.ContainsFunc(x, hasTemplate)
	case map[string]any:
		for k, e := range x {
			if isTemplate(k) || hasTemplate(e) {
				return true
			}
		}
	}
	return false
}
