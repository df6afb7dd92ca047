// Package docs is Skein's documentation. Its Go part holds the HTTP API's
// OpenAPI document, embedded so that skein serve answers it at
// GET /api/openapi.yaml as it is written here.
package docs

import _ "embed"

// OpenAPI is openapi.yaml: the OpenAPI 3.1 document of skein serve's API.
//
//go:embed openapi.yaml
var OpenAPI []byte
