package server

import (
	"net/http"

	"github.com/skeinhq/skein/internal/schema"
)

// workflowSchema answers the JSON Schema of a workflow file for the kinds
// this server runs: the editor's YAML pane completes keys and values and
// describes them from it.
func (s *Server) workflowSchema(w http.ResponseWriter, _ *http.Request) error {
	data, err := schema.Generate(s.registry())
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/schema+json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	return nil
}
