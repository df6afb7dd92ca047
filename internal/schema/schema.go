package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/skeinhq/skein/node"
)

// Draft is the JSON Schema dialect Generate writes.
const Draft = "https://json-schema.org/draft/2020-12/schema"

// Patterns the workflow validator enforces, restated for the schema.
const (
	namePattern = `^[a-z0-9][a-z0-9_-]*$`
	idPattern   = `^[a-z_][a-z0-9_]*$`
	maxIDLen    = 64
	// templatePattern marks a string as a template: its value is known only
	// at run time, so it stands in for a value of any type.
	templatePattern = `\{\{`
	// durationPattern accepts what workflow.ParseDuration reads: a Go
	// duration (1m30s, 500ms, 1.5h), a number of days (2d) or a bare number
	// of seconds.
	durationPattern = `^\s*(\d+d|\+?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+|\+?(\d+(\.\d*)?|\.\d+))\s*$`
	// secretPattern is a plain name: no spaces, dots or braces.
	secretPattern = `^[^ .{}]+$`
)

// Limits the decoder enforces, restated for the schema.
const (
	maxRetries   = 10
	maxVisits    = 1_000_000
	maxNodes     = 50_000
	maxModelToks = 10_000_000
)

// What the workflow package accepts, mirrored here because this package
// must not depend on it (the arrows point from workflow to node, and the
// schema is generated from node specs alone). TestMirrorsWorkflowPackage
// fails when they drift apart.
var (
	// onErrorValues are the values of on_error.
	onErrorValues = []string{"fail", "continue", "route"}
	// deliveryEvents mirrors workflow.DeliveryEvents.
	deliveryEvents = []string{"completed", "failed", "cancelled"}
	// inputTypes are the types an input may declare.
	inputTypes = []string{"string", "integer", "number", "boolean", "list", "map", "any"}
	// providers are the LLM providers.
	providers = []string{"anthropic", "openai"}
	// checkTypes are the check types and the keys each takes besides name,
	// type and on_fail; the first key is required unless it is target.
	checkTypes = map[string][]string{
		"expr":           {"expr"},
		"contains":       {"value", "target"},
		"not_contains":   {"value", "target"},
		"regex":          {"pattern", "target"},
		"json_schema":    {"schema", "target"},
		"http_status":    {"status"},
		"file_exists":    {"path"},
		"text_present":   {"text"},
		"text_absent":    {"text"},
		"template_found": {"template"},
		"window_title":   {"title"},
	}
)

// checkKeys describes the keys checks take.
var checkKeys = map[string]object{
	"expr":     {"type": "string", "description": "Expression over the node's output that must be true."},
	"value":    {"description": "What the target must (or must not) contain."},
	"target":   {"description": "What the check looks at; by default the node's output."},
	"pattern":  {"type": "string", "description": "Regular expression the target must match."},
	"schema":   {"description": "JSON Schema the target must match."},
	"status":   {"description": "The HTTP status expected."},
	"path":     {"description": "A file that must exist."},
	"text":     {"description": "Text that must (text_present) or must not (text_absent) be on screen."},
	"template": {"description": "An image that must be found on screen."},
	"title":    {"description": "The expected window title."},
}

// object is one JSON Schema object. Maps marshal with sorted keys, which
// keeps the output stable.
type object = map[string]any

func ref(name string) object { return object{"$ref": "#/$defs/" + name} }

// field is one common field of every node: declared once here, it feeds
// the schema and the docs.
type field struct {
	name   string
	typ    string // as shown in the docs
	schema object
	desc   string
}

// commonFields mirrors workflow.CommonFields, in the same order.
func commonFields() []field {
	return []field{
		{"id", "identifier", object{"type": "string", "pattern": idPattern, "maxLength": maxIDLen},
			"Names the node: lower-case letters, digits and _, starting with a letter or _, at most 64 characters. Expressions refer to the node's output by it."},
		{"type", "string", object{"type": "string"},
			"The node's kind, one of those below."},
		{"name", "string", object{"type": "string"},
			"A display name."},
		{"description", "string", object{"type": "string"},
			"What the node is for."},
		{"disabled", "boolean", object{"type": "boolean"},
			"Skip the node; the run flows on through its fall-through handle."},
		{"retries", "integer (0–10)", object{"type": "integer", "minimum": 0, "maximum": maxRetries},
			"Further attempts after a failure (default from defaults, else 0)."},
		{"retry_backoff", "duration", ref("duration"),
			"Wait before the first retry, doubled for each further one (default from defaults, else 1s)."},
		{"timeout", "duration", ref("duration"),
			"Longest one attempt may run (default from defaults, else 5m)."},
		{"on_error", "`fail` \\| `continue` \\| `route`", object{"type": "string", "enum": onErrorValues},
			"After the last attempt fails: fail stops the run, continue goes on with success false, route follows the `error` handle."},
		{"max_visits", "integer (1–1,000,000)", object{"type": "integer", "minimum": 1, "maximum": maxVisits},
			"Most times the node may run in one run, when it sits on a cycle (default from defaults, else 10)."},
		{"checks", "list of checks", object{"type": "array", "items": ref("check")},
			"Checks of the node's outcome, evaluated after the run."},
		{"expect", "string", object{"type": "string"},
			"The outcome expected, in words; judged by an LLM after the run."},
		{"queue", "queue name", object{"type": "string", "pattern": "^[a-z0-9]+([_-][a-z0-9]+)*$", "maxLength": 128},
			"The job queue of the node's attempts when workers run the workflow (`skein worker --queues`); default `default`."},
	}
}

// Generate returns the JSON Schema of a workflow file whose nodes may be of
// the kinds in reg (node.Default when reg is nil), indented and with sorted
// keys, so the same registry always gives the same bytes. It fails when a
// kind declares a parameter the schema cannot describe: an unknown type, an
// enum on a parameter that is not a string, or a name taken by a common
// field.
func Generate(reg *node.Registry) ([]byte, error) {
	if reg == nil {
		reg = node.Default
	}
	root, err := build(reg)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("schema: encoding: %w", err)
	}
	return buf.Bytes(), nil
}

func build(reg *node.Registry) (object, error) {
	defs := object{
		"template": object{
			"type":        "string",
			"pattern":     templatePattern,
			"description": "A template: a string holding {{ expr }} parts, whose value is known only at run time.",
		},
		"duration": object{
			"anyOf": []any{
				object{"type": "string", "pattern": durationPattern},
				object{"type": "number", "minimum": 0},
			},
			"description": "A duration such as 500ms, 30s, 5m, 1h30m or 2d; a bare number is seconds.",
		},
		"scalar": object{"type": []any{"string", "number", "boolean"}},
		"input":  inputSchema(),
		"mcpServer": object{
			"type": "object",
			"properties": object{
				"command": object{"type": "string", "description": "Program to spawn; the server speaks MCP over its stdin and stdout."},
				"args":    object{"type": "array", "items": ref("scalar"), "description": "Arguments of command."},
				"env":     object{"type": "object", "additionalProperties": ref("scalar"), "description": "Environment variables of the spawned server."},
				"cwd":     object{"type": "string", "description": "Working folder of the spawned server."},
				"url":     object{"type": "string", "description": "Address of a server reached over streamable HTTP."},
				"headers": object{"type": "object", "additionalProperties": ref("scalar"), "description": "HTTP headers sent to a url server."},
			},
			"oneOf": []any{
				object{"required": []string{"command"}},
				object{"required": []string{"url"}},
			},
			"additionalProperties": false,
			"description":          "An MCP server: spawned (command, args) or reached over HTTP (url); exactly one of command or url.",
		},
		"model": object{
			"type": "object",
			"properties": object{
				"provider":    object{"type": "string", "enum": providers, "description": "Who serves the model; any OpenAI-compatible server uses openai with base_url."},
				"model":       object{"type": "string", "description": "The provider's model name."},
				"base_url":    object{"type": "string", "description": "The API's address, for compatible servers and proxies."},
				"api_key":     object{"type": "string", "description": "The API key, usually \"{{ secrets.NAME }}\"."},
				"headers":     object{"type": "object", "additionalProperties": ref("scalar"), "description": "Extra HTTP headers."},
				"temperature": object{"type": "number", "description": "Sampling temperature."},
				"max_tokens":  object{"type": "integer", "minimum": 1, "maximum": maxModelToks, "description": "Most tokens in a reply."},
				"stream":      object{"type": "boolean", "description": "false: never ask this model for a stream (for a server that does not stream), whatever a node's stream says."},
				"price": object{
					"type": "object",
					"properties": object{
						"input_per_mtok":  object{"type": "number", "minimum": 0, "maximum": 1e6, "description": "US dollars per million input tokens."},
						"output_per_mtok": object{"type": "number", "minimum": 0, "maximum": 1e6, "description": "US dollars per million output tokens."},
					},
					"additionalProperties": false,
					"description":          "What the model costs, for a model Skein has no price for (or to override the one it has).",
				},
			},
			"additionalProperties": false,
			"description":          "A model configuration, referred to by name from nodes' model parameters.",
		},
		"edge": object{
			"type": "object",
			"properties": object{
				"from": object{"type": "string", "description": "Id of the node the edge leaves."},
				"to":   object{"type": "string", "description": "Id of the node the edge enters."},
				"on": object{
					"type":        []any{"string", "boolean", "number", "null"},
					"description": "The handle of from the edge leaves by; none is the default handle. An unquoted true or false means the handle \"true\" or \"false\".",
				},
			},
			"required":             []string{"from", "to"},
			"additionalProperties": false,
		},
		"check": checkSchema(),
	}

	fieldProps := object{}
	for _, f := range commonFields() {
		s := copyObject(f.schema)
		s["description"] = f.desc
		fieldProps[f.name] = s
	}
	defs["nodeFields"] = object{
		"type":        "object",
		"properties":  fieldProps,
		"description": "The common fields of every node; each kind's schema refers to them.",
	}

	specs := reg.Specs()
	kinds := make([]string, 0, len(specs))
	dispatch := make([]any, 0, len(specs))
	for _, spec := range specs {
		def, err := kindSchema(spec)
		if err != nil {
			return nil, err
		}
		name := "kind." + spec.Kind
		defs[name] = def
		kinds = append(kinds, spec.Kind)
		dispatch = append(dispatch, object{
			"if":   object{"properties": object{"type": object{"const": spec.Kind}}, "required": []string{"type"}},
			"then": ref(name),
		})
	}
	nodeSchema := object{
		"type":        "object",
		"required":    []string{"id", "type"},
		"properties":  object{"type": object{"type": "string", "enum": kinds, "description": "The node's kind."}},
		"description": "A node: the common fields and the parameters of its kind, side by side.",
	}
	if len(dispatch) > 0 {
		nodeSchema["allOf"] = dispatch
	}
	defs["node"] = nodeSchema

	return object{
		"$schema":     Draft,
		"title":       "Skein workflow",
		"description": "A Skein workflow file (YAML or JSON): a directed graph of nodes. Generated from the node kinds; see docs/nodes.md.",
		"type":        "object",
		"required":    []string{"version", "name", "nodes"},
		"properties": object{
			"version": object{"type": "integer", "const": 1, "description": "The file format's version; this Skein reads version 1."},
			"name":    object{"type": "string", "pattern": namePattern, "description": "The workflow's name: lower-case letters, digits, _ and -."},
			"description": object{
				"type": "string", "description": "What the workflow does.",
			},
			"inputs": object{
				"type":                 "object",
				"propertyNames":        object{"pattern": idPattern, "maxLength": maxIDLen},
				"additionalProperties": ref("input"),
				"description":          "Typed parameters of a run, by name; read as {{ inputs.NAME }}.",
			},
			"secrets": object{
				"type":        "array",
				"items":       object{"type": "string", "pattern": secretPattern},
				"uniqueItems": true,
				"description": "Names of secrets the workflow may read as {{ secrets.NAME }}; their values are never logged.",
			},
			"files": object{
				"type":        "array",
				"items":       object{"type": "string", "minLength": 1},
				"description": "Folders whose files nodes may read to send on (an llm node's images), besides the run's own folder; relative paths are relative to the workflow file's folder.",
			},
			"defaults": object{
				"type": "object",
				"properties": object{
					"retries":       object{"type": "integer", "minimum": 0, "maximum": maxRetries, "default": 0, "description": "Retries of a node that sets none."},
					"retry_backoff": withDesc(ref("duration"), "First wait between retries of a node that sets none.", "1s"),
					"timeout":       withDesc(ref("duration"), "Timeout of one attempt of a node that sets none.", "5m"),
					"max_visits":    object{"type": "integer", "minimum": 1, "maximum": maxVisits, "default": 10, "description": "Visit limit of a node on a cycle that sets none."},
					"on_error":      object{"type": "string", "enum": onErrorValues, "default": "fail", "description": "on_error of a node that sets none."},
				},
				"additionalProperties": false,
				"description":          "Values of common node fields for nodes that do not set them.",
			},
			"mcp_servers": object{
				"type":                 "object",
				"additionalProperties": ref("mcpServer"),
				"description":          "MCP servers the mcp and agent nodes may call, by name.",
			},
			"llm": object{
				"type":                 "object",
				"additionalProperties": ref("model"),
				"description":          "Models by name: default, vision, judge, repair, or any name a node's model parameter uses.",
			},
			"limits": object{
				"type": "object",
				"properties": object{
					"max_tokens":   object{"type": "integer", "minimum": 0, "description": "Most LLM tokens a run may spend."},
					"max_cost_usd": object{"type": "number", "description": "Most a run may spend on LLM calls, in US dollars."},
					"max_output_memory": object{
						"type":        []string{"integer", "string"},
						"description": "Bytes of output values a run keeps in memory (default 256MiB): a number of bytes or a size such as 512MiB or 2GiB, between 1MiB and 1TiB. Values over 64 KiB always go to files of the run folder (blobs/); once a run has kept this much, every value of 1 KiB or more does too.",
					},
				},
				"additionalProperties": false,
				"description":          "Bounds on a run's spending.",
			},
			"record": object{
				"type":        "boolean",
				"description": "Keep a cassette of every run's interactions with the outside world (models, MCP tools, HTTP, shell; secrets masked) in its run folder, for skein replay; as skein run --record.",
			},
			"trace": object{
				"type":        "string",
				"enum":        []string{"run", "nodes"},
				"description": "What a run's folder holds: run (the default) writes the run's run.json and events.jsonl; nodes also writes, in each node's folder, the node's run.json (its visits: status, times, attempts) and events.jsonl (its events) when the run ends or waits; as skein run --trace nodes, which wins over it.",
			},
			"evidence": object{
				"type": "object",
				"properties": object{
					"server":    object{"type": "string", "description": "Name of a server in mcp_servers."},
					"tool":      object{"type": "string", "description": "The tool that takes the screenshot."},
					"arguments": object{"type": "object", "description": "The tool's arguments."},
				},
				"additionalProperties": false,
				"description":          "The MCP tool called after a checked node succeeds; the image it returns is the node's evidence.",
			},
			"delivery": object{
				"type":     "object",
				"required": []string{"url", "secret"},
				"properties": object{
					"url":    object{"type": "string", "minLength": 1, "description": "Where the run's result is POSTed: an http or https URL, a template that may read inputs, secrets, execution and trigger."},
					"secret": object{"type": "string", "minLength": 1, "description": "The Standard Webhooks secret (whsec_ and base64) the deliveries are signed with, usually {{ secrets.NAME }}."},
					"events": object{
						"type": "array", "items": object{"type": "string", "enum": deliveryEvents}, "uniqueItems": true,
						"description": "The final run statuses that are delivered; all by default.",
					},
					"retries":       object{"type": "integer", "minimum": 0, "maximum": maxRetries, "default": 4, "description": "More attempts after a failed first one."},
					"retry_backoff": withDesc(ref("duration"), "Wait before the first retry, doubled before each next one (with jitter, at most a minute).", "1s"),
					"timeout":       withDesc(ref("duration"), "Timeout of one attempt.", "10s"),
				},
				"additionalProperties": false,
				"description":          "POST the run's summary and outputs, signed like a Standard Webhooks webhook, to a URL when the run ends; retried with backoff, each attempt an event of the run.",
			},
			"nodes": object{
				"type":        "array",
				"items":       ref("node"),
				"minItems":    1,
				"maxItems":    maxNodes,
				"description": "The nodes of the graph.",
			},
			"edges": object{
				"type":        "array",
				"items":       ref("edge"),
				"description": "The edges of the graph: {from, to, on}.",
			},
			"outputs": object{
				"type":        "object",
				"description": "The run's result, by name: templates or plain values. By default the outputs of the last nodes to finish.",
			},
		},
		"patternProperties": object{
			"^x-": object{"description": "An extension key Skein ignores: a place for YAML anchors (x-defaults: &defaults …, then <<: *defaults in a node)."},
		},
		"additionalProperties": false,
		"$defs":                defs,
	}, nil
}

func withDesc(s object, desc string, def any) object {
	s["description"] = desc
	if def != nil {
		s["default"] = def
	}
	return s
}

func copyObject(o object) object {
	c := make(object, len(o)+1)
	for k, v := range o {
		c[k] = v
	}
	return c
}

func inputSchema() object {
	return object{
		"anyOf": []any{
			object{
				"type": "object",
				"properties": object{
					"type":        object{"type": "string", "enum": inputTypes, "default": "string", "description": "The value's type."},
					"required":    object{"type": "boolean", "description": "A run must give the input."},
					"default":     object{"description": "The value when a run gives none; of the input's type."},
					"description": object{"type": "string", "description": "What the input is for."},
					"enum":        object{"type": "array", "description": "The values allowed."},
				},
				"additionalProperties": false,
			},
			object{"type": "string", "enum": inputTypes, "description": "Shorthand: just the type."},
			object{"type": "null", "description": "Shorthand: a string input."},
		},
		"description": "An input: {type, required, default, description, enum}, or just its type.",
	}
}

func checkSchema() object {
	names := make([]string, 0, len(checkTypes))
	for k := range checkTypes {
		names = append(names, k)
	}
	sort.Strings(names)
	dispatch := make([]any, 0, len(names))
	for _, name := range names {
		keys := checkTypes[name]
		props := object{
			"type":    object{"const": name},
			"name":    ref("check/properties/name"),
			"on_fail": ref("check/properties/on_fail"),
		}
		for _, k := range keys {
			props[k] = checkKeys[k]
		}
		then := object{"properties": props, "additionalProperties": false}
		if keys[0] != "target" {
			then["required"] = []string{keys[0]}
		}
		dispatch = append(dispatch, object{
			"if":   object{"properties": object{"type": object{"const": name}}, "required": []string{"type"}},
			"then": then,
		})
	}
	return object{
		"type":     "object",
		"required": []string{"type"},
		"properties": object{
			"type":    object{"type": "string", "enum": names, "description": "What kind of check."},
			"name":    object{"type": "string", "description": "Names the check in verdicts."},
			"on_fail": object{"type": "string", "enum": []string{"fail", "warn"}, "default": "fail", "description": "fail: the run's verdict fails; warn: it passes with a warning."},
		},
		"allOf":       dispatch,
		"description": "A check of the node's outcome.",
	}
}

// kindSchema describes a node of one kind: the common fields, the kind's
// parameters, and nothing else.
func kindSchema(spec *node.Spec) (object, error) {
	props := object{}
	for _, f := range commonFields() {
		props[f.name] = ref("nodeFields/properties/" + f.name)
	}
	props["type"] = object{"const": spec.Kind}
	required := []string{"id", "type"}
	for _, p := range spec.Params {
		if _, taken := props[p.Name]; taken {
			return nil, fmt.Errorf("schema: kind %q: parameter %q has the name of a common node field", spec.Kind, p.Name)
		}
		s, err := paramSchema(p)
		if err != nil {
			return nil, fmt.Errorf("schema: kind %q: %w", spec.Kind, err)
		}
		props[p.Name] = s
		if p.Required {
			required = append(required, p.Name)
		}
	}
	def := object{
		"type":                 "object",
		"title":                spec.Kind,
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
	if spec.Description != "" {
		def["description"] = spec.Description
	}
	return def, nil
}

// paramSchema describes one parameter's value.
// anyValue is every JSON type but null.
var anyValue = []string{"string", "number", "boolean", "object", "array"}

func paramSchema(p node.Param) (object, error) {
	if len(p.Enum) > 0 && p.Type != node.String {
		return nil, fmt.Errorf("parameter %q: an enum needs type %s, not %s", p.Name, node.String, p.Type)
	}
	// The schemas follow node.Param.Coerce: what validation accepts, the
	// schema accepts (a number for a string parameter, "42" for an integer).
	var s object
	switch p.Type {
	case node.String:
		s = object{"type": anyValue}
		if len(p.Enum) > 0 {
			s = object{"type": "string", "enum": p.Enum}
		}
	case node.Int:
		s = object{"type": "integer"}
		if p.Max != 0 {
			s["minimum"], s["maximum"] = p.Min, p.Max
		} else {
			s = object{"anyOf": []any{s, object{"type": "string", "pattern": `^\s*[-+]?[0-9]+\s*$`}}}
		}
	case node.Number:
		s = object{"anyOf": []any{object{"type": "number"}, object{"type": "string", "pattern": `^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$`}}}
	case node.Bool:
		s = object{"anyOf": []any{object{"type": "boolean"}, object{"type": "string", "pattern": `^\s*([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])\s*$`}}}
	case node.Duration:
		s = ref("duration")
	case node.Strings:
		s = object{"anyOf": []any{
			object{"type": "array", "items": object{"type": anyValue}},
			object{"type": []string{"string", "number", "boolean"}},
		}}
	case node.List:
		s = object{"type": "array"}
		if len(p.Items) > 0 {
			item, err := itemSchema(p)
			if err != nil {
				return nil, err
			}
			s["items"] = item
		}
	case node.Map:
		s = object{"type": "object"}
	case node.Any:
		s = object{}
	default:
		return nil, fmt.Errorf("parameter %q has unknown type %q", p.Name, p.Type)
	}
	if templatable(p) && !acceptsAnyString(p) {
		if alts, ok := s["anyOf"].([]any); ok {
			s["anyOf"] = append(alts, ref("template"))
		} else {
			s = object{"anyOf": []any{s, ref("template")}}
		}
	}
	if p.Description != "" {
		s["description"] = p.Description
	}
	if p.Default != nil {
		s["default"] = p.Default
	}
	return s, nil
}

// templatable reports whether a parameter's value may be a template.
func templatable(p node.Param) bool { return !p.NoTemplate && !p.Expr }

// acceptsAnyString reports whether the plain schema of a parameter already
// takes every string, so a template needs no alternative.
func acceptsAnyString(p node.Param) bool {
	return p.Type == node.Any || (p.Type == node.String && len(p.Enum) == 0) || p.Type == node.Strings
}

// itemSchema describes an element of a list of objects with declared
// fields.
func itemSchema(p node.Param) (object, error) {
	props := object{}
	var required []string
	for _, ip := range p.Items {
		if ip.Name == "" {
			return nil, fmt.Errorf("parameter %q declares an item field without a name", p.Name)
		}
		if _, dup := props[ip.Name]; dup {
			return nil, fmt.Errorf("parameter %q declares item field %q twice", p.Name, ip.Name)
		}
		s, err := paramSchema(ip)
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", p.Name, err)
		}
		props[ip.Name] = s
		if ip.Required {
			required = append(required, ip.Name)
		}
	}
	item := object{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		item["required"] = required
	}
	return item, nil
}
