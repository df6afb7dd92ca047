// Package llmtest fakes the OpenAI chat completions and Anthropic Messages
// APIs for tests, and holds the conformance suite of llm providers.
//
// A Server listens on 127.0.0.1 and plays a Script: one Turn per request,
// either a reply (text, tool calls, usage; sent as an event stream in the
// API's own chunk format when the request asks for one, unless the turn
// IgnoreStream: then as one JSON body, as some servers do) or a failure (an
// error status with Retry-After, a body that is not JSON, a request that
// never gets an answer). It records every request, decoded back into llm
// types, so a test can assert what was sent: messages, images, tools,
// schema, headers.
//
//	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("hi")})
//	p, _ := openai.New(llm.Config{BaseURL: srv.BaseURL(), Model: "gpt-4.1-mini"})
//	resp, err := p.Chat(ctx, llm.Request{Messages: []llm.Message{llm.User("hello")}})
//	// srv.Last().Messages[0].Content == "hello"
//
// RunProviderSuite runs the same checks against any provider; every
// provider package calls it from its tests.
package llmtest
