package server

import (
	"bytes"
	"io"
	"net/http"

	"github.com/skeinhq/skein/internal/reqbody"
)

// Every request body is read by readBody and its JSON decoded by
// reqbody.DecodeJSON: the API's bodies, a signal's, a chat message's and
// a webhook's. A body reqbody refuses is answered as a problem with the
// refusal's status and code (problemOf).

// readBody reads the request's body, at most limit bytes (413 too_large
// past it).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// decodeBody reads a JSON object body into v; an empty body leaves v as
// it is. Unknown fields are refused.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	raw, err := readBody(w, r, maxBody)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	return reqbody.DecodeJSON(raw, v, true)
}
