// Package http calls URLs: method, headers, query, a JSON, text or form
// body, auth, redirects and expected statuses.
package http

import "github.com/skeinhq/skein/node"

// Kind is the kind name.
const Kind = "http"

// Spec declares the http kind.
var Spec = node.Spec{
	Kind: Kind, Category: node.Action,
	Description: "Sends an HTTP request. The output is {status, headers, body}; JSON bodies are parsed.",
	Params: []node.Param{
		{Name: "method", Type: node.String, Default: "GET", Enum: []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, Description: "HTTP method."},
		{Name: "url", Type: node.String, Required: true, Description: "The URL."},
		{Name: "query", Type: node.Map, Description: "Query parameters added to the URL."},
		{Name: "headers", Type: node.Map, Description: "Request headers."},
		{Name: "json", Type: node.Any, Description: "A value sent as a JSON body."},
		{Name: "body", Type: node.String, Description: "A text body."},
		{Name: "form", Type: node.Map, Description: "A form body (application/x-www-form-urlencoded)."},
		{Name: "auth", Type: node.Map, Description: "{type: bearer, token} or {type: basic, username, password}."},
		{Name: "follow_redirects", Type: node.Bool, Default: true, Description: "Follow 3xx redirects."},
		{Name: "expect_status", Type: node.List, Description: "Statuses that count as success (default: any 2xx)."},
		{Name: "max_body", Type: node.Int, Default: 10 << 20, Description: "Bytes of response body kept."},
	},
	Outputs: []string{"status", "headers", "body", "truncated"},
	Routes:  true,
	Check: func(p map[string]any) []node.ParamError {
		n := 0
		for _, k := range []string{"json", "body", "form"} {
			if _, ok := p[k]; ok {
				n++
			}
		}
		if n > 1 {
			return []node.ParamError{{Param: "body", Message: "set at most one of json, body or form"}}
		}
		return nil
	},
}

func init() { node.MustRegister(Spec, nil) }
