package mcp

import "github.com/skeinhq/skein/node"

// Kind is the kind name.
const Kind = "mcp"

// Spec declares the mcp kind.
var Spec = node.Spec{
	Kind: Kind, Category: node.Action,
	Description: "Calls a tool on an MCP server. Text results that are JSON are parsed; the output follows the extraction rule.",
	Params: []node.Param{
		{Name: "server", Type: node.String, Required: true, NoTemplate: true, Ref: node.RefMCPServer, Description: "Name of a server in mcp_servers."},
		{Name: "tool", Type: node.String, Required: true, Description: "The tool's name."},
		{Name: "arguments", Type: node.Map, Description: "The tool's arguments (templates)."},
	},
	Routes: true,
}

func init() { node.MustRegister(Spec, func() node.Kind { return &MCP{} }) }
