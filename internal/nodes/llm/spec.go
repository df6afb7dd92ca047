// Package llm declares the AI kinds: llm (one model call) and agent (a
// model that calls MCP tools in a loop).
package llm

import (
	"slices"

	"github.com/skeinhq/skein/node"
)

// Kind names.
const (
	LLM   = "llm"
	Agent = "agent"
)

// LLMSpec declares the llm kind.
var LLMSpec = node.Spec{
	Kind: LLM, Category: node.AI,
	Description: "Calls a model with a prompt or messages; the reply is `text`, or `json` validated against `schema`. A reply that is a JSON object with `_route` (the `json`, or the whole text) routes the run to that handle, as a shell script's does.",
	Params: []node.Param{
		{Name: "prompt", Type: node.String, Description: "The user message."},
		{Name: "messages", Type: node.List, Description: "A conversation: [{role, content, tool_calls?, tool_call_id?}], such as the run's `{{ messages }}` (the nodes' `_messages`), sent after the system prompt; set it or prompt."},
		{Name: "system", Type: node.String, Description: "The system prompt."},
		{Name: "model", Type: node.Strings, Default: "default", NoTemplate: true, Ref: node.RefModel, Description: "Name of a model from llm:, or a list of them: `[primary, fallback, …]`. When a model is exhausted — rate limited (429), failing (5xx), timed out or unreachable after its retries — a `model_fallback` event says so and the next one answers, and the node's later calls; any other error (400, 401) fails the node. Each reply is charged at the price of the model that gave it; the output `model` is the model that answered (last)."},
		{Name: "temperature", Type: node.Number, Description: "Sampling temperature, 0 to 2."},
		{Name: "max_tokens", Type: node.Int, Description: "Most tokens in the reply (more than 0)."},
		{Name: "schema", Type: node.Map, Description: "JSON Schema the reply must match; the parsed reply is `json`. A top-level `confidence` number in the schema is the step's confidence_score (`<node>.confidence`)."},
		{Name: "images", Type: node.List, Description: "Images sent with the prompt: file paths (relative to the workflow's folder), or the images output of an mcp node ({path, mime} entries). Only regular files in the run's folder or a folder of `files:` are read, at most 20 MiB each; any other path fails the node with `file_not_allowed`."},
		{Name: "memory", Type: node.Map, Description: "Remember a conversation: {thread, max_messages}. The node's turn (its prompt, or its last user message, and the model's final answer, secrets masked) is kept in the run's store under thread (usually \"{{ trigger.conversation }}\"), per workflow; the thread's last max_messages messages (default 20) go before the prompt in every later run. A step run again (a resume) replaces its turn, and a rerun the turn of the run it re-runs, rather than adding one; a turn is deleted with its run (skein runs prune). A thread that renders empty keeps nothing."},
		{Name: "stream", Type: node.Bool, Default: true, NoTemplate: true, Description: "Stream the reply: its text goes out as `llm_delta` events while the node runs (the first piece at once, then at most one event every 100 ms or 200 characters, each ending at a blank); the step's output is the whole reply either way. `false` waits for the whole reply. A server that ignores the request for a stream and answers with one JSON body is read whole (no `llm_delta` events), with one `warning` event per step (`unstreamed: true`) that suggests `stream: false`."},
		{Name: "send_secrets", Type: node.Bool, Default: false, NoTemplate: true, Description: "Allow the prompt, system prompt or messages to read {{ secrets.X }}, which sends the secret to the model's provider."},
	},
	Outputs: []string{"text", "json", "usage", "model"},
	Routes:  true,
	Check: func(p map[string]any) []node.ParamError {
		// null is no value, as for any parameter.
		a, b := p["prompt"] != nil, p["messages"] != nil
		if a == b {
			return []node.ParamError{{Param: "prompt", Message: "set exactly one of prompt or messages"}}
		}
		return slices.Concat(checkSecrets(p), checkSampling(p), checkMemoryParam(p), checkMessages(p))
	},
}

// AgentSpec declares the agent kind.
var AgentSpec = node.Spec{
	Kind: Agent, Category: node.AI,
	Description: "A model that calls tools (MCP tools and workflows) in a loop until it answers; calls of approve_tools wait for a person's approval. At max_tool_calls it stops with the last text it had and `stopped: max_tool_calls` (a warning event says so); `stopped` is empty when it answered. With `schema`, the answer is JSON and `json` holds it parsed.",
	Params: []node.Param{
		{Name: "prompt", Type: node.String, Required: true, Description: "The task."},
		{Name: "messages", Type: node.List, Description: "A conversation before the task: [{role, content, tool_calls?, tool_call_id?}], such as the run's `{{ messages }}` (the nodes' `_messages`); it goes after the system prompt and the remembered turns, before the prompt."},
		{Name: "system", Type: node.String, Description: "The system prompt."},
		{Name: "model", Type: node.Strings, Default: "default", NoTemplate: true, Ref: node.RefModel, Description: "Name of a model from llm:, or a list of them: `[primary, fallback, …]`. When a model is exhausted — rate limited (429), failing (5xx), timed out or unreachable after its retries — a `model_fallback` event says so and the next one answers, and the node's later calls; any other error (400, 401) fails the node. Each reply is charged at the price of the model that gave it; the output `model` is the model that answered (last)."},
		{Name: "tools", Type: node.Any, Ref: node.RefMCPTools, Description: "Tools offered: MCP tools as server.tool or server.* patterns, and workflows as {workflow: file (relative to this one), name: what the model calls it, description} — the tool's input schema is the child workflow's inputs, each call is a child run (budgeted with the run), and its outputs are the tool's result. See docs/workflows.md#agents-tools."},
		{Name: "allowed_tools", Type: node.Strings, Description: "Narrows tools: only the tools that also match one of these patterns are offered to the model and pinned; the model never sees the others, and a call of a tool not offered gets a tool error back."},
		{Name: "approve_tools", Type: node.Strings, Description: "Tools whose calls wait for a person's approval, by name (write_file), as server.tool, or as patterns (fs.write_*): the step waits for a signal, showing the call; `{\"approved\": true}` runs it, anything else (`{\"approved\": false, \"reason\": \"…\"}`) gives the model a refusal, with the reason, as the tool's result. The agent goes on from where it stopped, without asking the model again."},
		{Name: "max_tool_calls", Type: node.Int, Default: 20, Description: "Stop after this many tool calls."},
		{Name: "temperature", Type: node.Number, Description: "Sampling temperature, 0 to 2."},
		{Name: "max_tokens", Type: node.Int, Description: "Most tokens in each reply of the model (more than 0)."},
		{Name: "schema", Type: node.Map, Description: "JSON Schema the final answer must match (asked for in every request, so an OpenAI model answers in that form and an Anthropic one gives it as a tool's input); the parsed answer is `json`. An answer that does not match gets one re-ask, without tools; both replies are billed, and a second bad answer fails the node with `llm_malformed`."},
		{Name: "images", Type: node.String, Default: "summarize", Enum: []string{"summarize", "pass"}, NoTemplate: true, Description: "Images tools return: summarize with the vision model, or pass them to the model."},
		{Name: "memory", Type: node.Map, Description: "Remember a conversation: {thread, max_messages}. The node's turn (its prompt, and the model's final answer, secrets masked) is kept in the run's store under thread (usually \"{{ trigger.conversation }}\"), per workflow; the thread's last max_messages messages (default 20) go before the prompt in every later run. A step run again (a resume) replaces its turn, and a rerun the turn of the run it re-runs, rather than adding one; a turn is deleted with its run (skein runs prune). A thread that renders empty keeps nothing."},
		{Name: "stream", Type: node.Bool, Default: true, NoTemplate: true, Description: "Stream the reply: its text goes out as `llm_delta` events while the node runs (the first piece at once, then at most one event every 100 ms or 200 characters, each ending at a blank); the step's output is the whole reply either way. `false` waits for the whole reply. A server that ignores the request for a stream and answers with one JSON body is read whole (no `llm_delta` events), with one `warning` event per step (`unstreamed: true`) that suggests `stream: false`."},
		{Name: "send_secrets", Type: node.Bool, Default: false, NoTemplate: true, Description: "Allow the prompt or system prompt to read {{ secrets.X }}, which sends the secret to the model's provider."},
	},
	Outputs:      []string{"text", "json", "tool_calls", "usage", "model", "stopped"},
	Routes:       true,
	RunsChildren: true,
	Parks: func(p map[string]any) bool {
		switch v := p["approve_tools"].(type) {
		case []any:
			return len(v) > 0
		case string:
			return v != ""
		}
		return false
	},
	Check: func(p map[string]any) []node.ParamError {
		return slices.Concat(checkTools(p), checkSecrets(p), checkSampling(p), checkMemoryParam(p), checkMessages(p))
	},
}

func init() {
	node.MustRegister(LLMSpec, func() node.Kind { return LLMKind{} })
	node.MustRegister(AgentSpec, func() node.Kind { return AgentKind{} })
}
