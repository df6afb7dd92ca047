package mcp

import (
	"strings"

	"github.com/skeinhq/skein/node"
)

// Kind is the kind name.
const Kind = "mcp"

// Spec declares the mcp kind.
var Spec = node.Spec{
	Kind: Kind, Category: node.Action,
	Description: "Calls a tool on an MCP server. Text results that are JSON are parsed; the output follows the extraction rule. " +
		"The tool is checked against the workflow's lock file first (see Pinned MCP tools in workflows.md).",
	Params: []node.Param{
		{Name: "server", Type: node.String, Required: true, NoTemplate: true, Ref: node.RefMCPServer, Description: "Name of a server in mcp_servers."},
		{Name: "tool", Type: node.String, Required: true, Description: "The tool's name."},
		{Name: "arguments", Type: node.Map, Description: "The tool's arguments (templates). " +
			"An argument written `{resolve: \"the invoice window\", from: {tool: list_windows, args: {…}, server: …}, field: id, model: …}` " +
			"is resolved first, the tool before a model: `find_text` is called for the target (in the focused app) and one match is the answer; " +
			"another listing tool's one item named as the target (ignoring case) is the answer; a model (`model`, else `default`) picks only among several matches, " +
			"or among the elements find_text saw (`available_elements`) or the items listed when nothing matched directly; the argument is the item, or its `field`. " +
			"What a model decided is kept for the run (per target and app for find_text, per app name for list_apps; on queue workers, by each worker) and forgotten before the node's retry; " +
			"each resolution is a `resolved` event (argument, description, source: tool, cache or model, items, item, value, app, and the model's index, reason and model) and its tokens count as the step's. " +
			"No candidates at all fails the node with `resolve_no_items`; no matching item with `resolve_no_match` (retried like any failure). See Resolving arguments by name in workflows.md."},
	},
	Routes: true,
	Check:  checkParams,
}

// checkParams checks the tool and the resolve: arguments written in the
// file.
func checkParams(params map[string]any) []node.ParamError {
	if tool, ok := params["tool"]; ok && tool != nil {
		if s, err := node.Text(tool); err == nil && strings.TrimSpace(s) == "" {
			return []node.ParamError{{Param: "tool", Message: "tool is empty; give the name of a tool of the server"}}
		}
	}
	args, ok := params["arguments"].(map[string]any)
	if !ok {
		return nil
	}
	if _, err := resolveSpecs(args, ""); err != nil {
		return []node.ParamError{{Param: "arguments", Message: node.AsError(err).Message}}
	}
	return nil
}

func init() { node.MustRegister(Spec, func() node.Kind { return &MCP{} }) }
