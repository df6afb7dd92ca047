package mcpserver

import (
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/skeinhq/skein/internal/record"
)

// Tool schemas are kept portable, as the MCP Inspector's --strict check
// asks: every sub-schema is an object that declares what its value is
// (no bare true, no schema without a keyword) and has a single type; a
// value of several types is an anyOf of single-typed branches.

// anyJSON is the schema of any JSON value.
func anyJSON() *jsonschema.Schema {
	var branches []*jsonschema.Schema
	for _, t := range []string{"object", "array", "string", "number", "boolean", "null"} {
		branches = append(branches, &jsonschema.Schema{Type: t})
	}
	return &jsonschema.Schema{AnyOf: branches}
}

// nullable is s or null.
func nullable(s *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{s, {Type: "null"}}}
}

// portable rewrites s in place: a schema that accepts anything becomes
// anyJSON (except as additionalProperties, where true is the rule's
// own spelling), and a type array becomes an anyOf of single types.
func portable(s *jsonschema.Schema) {
	walkPortable(s, false)
}

func walkPortable(s *jsonschema.Schema, additional bool) {
	if s == nil {
		return
	}
	if bare := *s; !additional {
		bare.Title, bare.Description, bare.Default, bare.Examples = "", "", nil, nil
		if reflect.ValueOf(bare).IsZero() {
			s.AnyOf = anyJSON().AnyOf
			return
		}
	}
	if len(s.Types) > 0 {
		for _, t := range s.Types {
			s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Type: t})
		}
		s.Types = nil
	}
	for _, p := range s.Properties {
		walkPortable(p, false)
	}
	for _, d := range s.Defs {
		walkPortable(d, false)
	}
	for _, list := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems} {
		for _, c := range list {
			walkPortable(c, false)
		}
	}
	walkPortable(s.Items, false)
	walkPortable(s.AdditionalProperties, true)
}

// runDocSchema is the output schema of the tools that return a run: the
// run document's top level: the fields a client reads first, with the
// others allowed.
func runDocSchema() *jsonschema.Schema {
	str := func(desc string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: desc} }
	integer := func(desc string) *jsonschema.Schema { return &jsonschema.Schema{Type: "integer", Description: desc} }
	object := func(desc string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "object", Description: desc, AdditionalProperties: &jsonschema.Schema{}}
	}
	errSchema := func() *jsonschema.Schema {
		return &jsonschema.Schema{
			Type:        "object",
			Description: "why it failed: code, category, message",
			Properties: map[string]*jsonschema.Schema{
				"code":     str(""),
				"category": str(""),
				"message":  str(""),
			},
		}
	}
	step := &jsonschema.Schema{
		Type:        "object",
		Description: "one step: a node's execution (its visit, iteration and attempts)",
		Properties: map[string]*jsonschema.Schema{
			"node":        str("the node's id"),
			"type":        str("the node's type"),
			"status":      str("completed, failed, skipped, cancelled, running, waiting or pending"),
			"output":      nullable(object("the step's output")),
			"error":       nullable(errSchema()),
			"cached":      {Type: "boolean", Description: "reused from an earlier execution of the run"},
			"duration_ms": integer(""),
		},
	}
	status := str("the run's status")
	status.Enum = []any{
		record.RunPending, record.RunRunning, record.RunWaiting,
		record.RunCompleted, record.RunFailed, record.RunCancelled,
	}
	return &jsonschema.Schema{
		Type:        "object",
		Description: "the run document: the run's status, inputs, outputs, error and steps",
		Required:    []string{"execution_id", "workflow", "status"},
		Properties: map[string]*jsonschema.Schema{
			"execution_id": str("the run's id"),
			"workflow":     str("the workflow's name"),
			"status":       status,
			"inputs":       nullable(object("the run's inputs by name")),
			"outputs":      nullable(object("the workflow's outputs by name")),
			"error":        nullable(errSchema()),
			"steps":        nullable(&jsonschema.Schema{Type: "array", Items: step, Description: "in run order"}),
			"trigger":      str("the trigger node it started from"),
			"file":         str("the workflow file"),
			"generation":   integer("1, then one more per resume"),
			"started_at":   {Type: "string", Format: "date-time"},
			"finished_at":  nullable(&jsonschema.Schema{Type: "string", Format: "date-time"}),
			"duration_ms":  integer(""),
			"tokens":       integer("tokens the run's AI steps used"),
			"cost_usd":     {Type: "number", Description: "what they cost, in US dollars"},
		},
	}
}
