// Package llm is Skein's seam to language models.
//
// A Provider sends a conversation (Request: messages with images and tool
// results, tools, a JSON schema, streaming or not) and returns the reply
// (Response: text, tool calls, token usage, stop reason). Two providers
// register themselves from their packages, the way database/sql drivers
// do: internal/llm/openai (the chat completions API, which OpenAI, Ollama,
// vLLM and llama.cpp's server all speak) and internal/llm/anthropic. New
// turns a workflow's llm: entry into a provider, filling gaps from the
// environment.
//
// What every provider shares lives here: the retry policy (429 and 5xx,
// honouring Retry-After, at most three retries, with an injectable sleep),
// the error categories (llm_rate_limit, llm_http, llm_timeout,
// llm_malformed, authentication; errors are *node.Error with the status
// and the start of the body in their details), the price table behind Cost,
// and ChatJSON, which asks for JSON matching a schema, validates it and
// re-asks once. WholeReply lets a provider read the answer of a server that
// ignores a request's stream flag (one JSON body instead of events) as the
// whole reply, marked Response.Unstreamed.
//
// internal/llm/llmtest holds a scripted fake of both APIs and the
// conformance suite every provider runs.
package llm
