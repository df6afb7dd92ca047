package runner

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// RunSchemaID is the $id of schema/run.schema.json.
const RunSchemaID = "https://skein.dev/schema/run.schema.json"

// RunSchema returns the JSON Schema of RunDoc, the one JSON shape of a run,
// as published in schema/run.schema.json.
func RunSchema() ([]byte, error) {
	s, err := jsonschema.For[RunDoc](nil)
	if err != nil {
		return nil, err
	}
	s.Properties["status"].Enum = []any{"pending", "running", "waiting", "completed", "failed", "cancelled", StatusInterrupted}
	s.Properties["status"].Description = "interrupted: the process running it died; skein resume continues it"
	step := s.Properties["steps"].Items
	step.Properties["output"] = &jsonschema.Schema{Types: []string{"null", "object"}, Description: "the step's output object; null when it has none"}
	step.Properties["status"].Enum = []any{"pending", "running", "success", "failed", "skipped", "waiting", "cancelled"}
	s.Properties["steps"].Type, s.Properties["steps"].Types = "array", nil
	s.Schema = "https://json-schema.org/draft/2020-12/schema"
	s.ID = RunSchemaID
	s.Title = "Skein run"
	s.Description = "A run with its steps: what skein run -o json, skein runs show -o json, the MCP tools and the API return."
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
