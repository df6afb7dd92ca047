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
			"is resolved first: the listing tool is called (on the node's server unless `from.server` names another), " +
			"a model (`model`, else `default`) picks the item that matches the description, and the argument is that item, or its `field`. " +
			"The pick is kept for the run (per node and description; on queue workers, by each worker) and made again before a retry; each one is a `resolved` event " +
			"(argument, description, items, index, item, value, reason, model; `cached: true` when reused) and its tokens count as the step's. " +
			"No matching item fails the node (`resolve_no_match`, retried like any failure)."},
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
