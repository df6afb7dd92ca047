package standard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/llm/registry"
	mcpclient "github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/node/nodetest"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

// TestConformance runs the node conformance suite over every standard
// kind; a kind without a Config here fails it.
func TestConformance(t *testing.T) {
	t.Parallel()
	configs := conformance(t)
	for kind := range configs {
		if _, ok := node.Default.Lookup(kind); !ok {
			t.Errorf("conformance() has a Config for kind %s, which is not registered", kind)
		}
	}
	for _, kind := range node.Default.Kinds() {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			cfg, ok := configs[kind]
			if !ok {
				t.Fatalf("kind %s has no nodetest Config: add one to conformance()", kind)
			}
			nodetest.Run(t, node.Default, kind, cfg)
		})
	}
}

// conformance returns the suite's Config of every standard kind, with the
// fakes they talk to, which the test's cleanup stops.
func conformance(t *testing.T) map[string]nodetest.Config {
	web := httptest.NewServer(webRoutes())
	t.Cleanup(web.Close)
	tools := mcptest.New(t)
	tools.AddTool("echo", nil, func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		b, err := json.Marshal(args)
		return mcptest.Text(string(b)), err
	})
	mcpWorkflow := map[string]any{"mcp_servers": map[string]any{"test": map[string]any{"url": tools.URL}}}
	aiWorkflow := map[string]any{
		"mcp_servers": map[string]any{"test": map[string]any{"url": tools.URL}},
		"llm":         map[string]any{"default": map[string]any{"provider": "openai", "model": testModel, "base_url": "http://127.0.0.1:1/v1", "api_key": "k"}},
	}
	return map[string]nodetest.Config{
		"mcp": {
			Workflow: mcpWorkflow,
			Refusals: map[string]string{"unknown_tool": "the server's tools are known at run time only"},
			Samples: []nodetest.Sample{
				{Name: "echo", Params: map[string]any{"server": "test", "tool": "echo", "arguments": map[string]any{"n": 1}}, Check: func(t *testing.T, out map[string]any) {
					require.Equal(t, 1, out["n"], "the output: %v", out)
				}},
				{Name: "unknown_tool", Params: map[string]any{"server": "test", "tool": "nope"}, Fails: "unknown_tool"},
			},
			Services: func(t *testing.T) *node.Services { return mcpServices(t, tools, nil) },
			Block: func(t *testing.T) (nodetest.Sample, <-chan struct{}) {
				srv, started := holdingTools(t)
				return nodetest.Sample{Name: "tool_holds", Params: map[string]any{"server": "test", "tool": "hold"}, Call: func(t *testing.T, c *node.Call) {
					c.Services = mcpServices(t, srv, nil)
				}}, started
			},
		},
		"llm": {
			Workflow:   aiWorkflow,
			Categories: llmCategories,
			Refusals:   map[string]string{node.CodeFileNotFound: "whether an image file exists is known at run time only"},
			Samples: []nodetest.Sample{
				{Name: "prompt", Params: map[string]any{"prompt": "hi", "system": "be brief", "temperature": 0.5, "max_tokens": 100}, Check: func(t *testing.T, out map[string]any) {
					require.Equal(t, "hello", out["text"])
				}},
				{Name: "messages", Params: map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "stream": false}},
				{Name: "schema", Params: map[string]any{"prompt": "hi", "schema": map[string]any{"type": "object"}}, Call: replies(`{"a": 1}`), Check: func(t *testing.T, out map[string]any) {
					b, err := json.Marshal(out["json"])
					require.NoError(t, err)
					require.JSONEq(t, `{"a": 1}`, string(b))
				}},
			},
			Services: func(t *testing.T) *node.Services { return aiServices(t, tools, llmtest.Reply("hello")) },
			Block: func(t *testing.T) (nodetest.Sample, <-chan struct{}) {
				srv, started := holdingModel(t)
				return nodetest.Sample{Name: "model_holds", Params: map[string]any{"prompt": "hi"}, Call: func(t *testing.T, c *node.Call) {
					c.Services = registry.Service.Provide(c.Services, models(srv))
				}}, started
			},
		},
		"agent": {
			Workflow:   aiWorkflow,
			Categories: llmCategories,
			Samples: []nodetest.Sample{
				{Name: "answer", Params: map[string]any{"prompt": "hi"}, Check: func(t *testing.T, out map[string]any) {
					require.Equal(t, "hello", out["text"])
				}},
				{Name: "tool_call", Params: map[string]any{"prompt": "echo 1", "tools": []any{"test.echo"}}, Call: func(t *testing.T, c *node.Call) {
					c.Services = aiServices(t, tools, llmtest.CallTools(llm.ToolCall{ID: "c1", Name: "echo", Arguments: map[string]any{"n": 1}}), llmtest.Reply("done"))
				}, Check: func(t *testing.T, out map[string]any) {
					require.Equal(t, "done", out["text"])
				}},
			},
			Services: func(t *testing.T) *node.Services { return aiServices(t, tools, llmtest.Reply("hello")) },
			Block: func(t *testing.T) (nodetest.Sample, <-chan struct{}) {
				srv, started := holdingModel(t)
				return nodetest.Sample{Name: "model_holds", Params: map[string]any{"prompt": "hi"}, Call: func(t *testing.T, c *node.Call) {
					c.Services = registry.Service.Provide(c.Services, models(srv))
				}}, started
			},
		},
		"http": {
			Samples: []nodetest.Sample{
				{Name: "get_json", Params: map[string]any{"url": web.URL + "/json"}, Check: func(t *testing.T, out map[string]any) {
					require.Equal(t, 200, out["status"])
					require.Equal(t, map[string]any{"ok": true}, out["body"])
				}},
				{Name: "post_json", Params: map[string]any{"method": "POST", "url": web.URL + "/json", "json": map[string]any{"a": 1},
					"headers": map[string]any{"X-A": "1"}, "query": map[string]any{"q": []any{"a", "b"}}, "auth": map[string]any{"type": "bearer", "token": "t"}}},
				{Name: "put_form", Params: map[string]any{"method": "PUT", "url": web.URL + "/json", "form": map[string]any{"a": 1}}},
				{Name: "expected_404", Params: map[string]any{"url": web.URL + "/missing", "expect_status": []any{404}}, Check: func(t *testing.T, out map[string]any) {
					require.Equal(t, 404, out["status"])
				}},
				{Name: "server_error", Params: map[string]any{"url": web.URL + "/fail"}, Fails: "http_500"},
			},
			Block: func(t *testing.T) (nodetest.Sample, <-chan struct{}) {
				started := make(chan struct{})
				var once sync.Once
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					once.Do(func() { close(started) })
					<-r.Context().Done()
				}))
				t.Cleanup(srv.Close)
				return nodetest.Sample{Name: "server_holds", Params: map[string]any{"url": srv.URL}}, started
			},
		},
		"shell": {
			Refusals: map[string]string{"cwd": "whether the folder exists is known at run time only"},
			Samples: []nodetest.Sample{
				{Name: "argv", Params: map[string]any{"command": []any{"echo", `{"n": 1}`}}, Check: func(t *testing.T, out map[string]any) {
					require.Equal(t, map[string]any{"n": 1}, out["json"])
				}},
				{Name: "script", Params: map[string]any{"command": "tr a-z A-Z", "shell": true, "stdin": "hi", "env": map[string]any{"X": "1"}}, Check: func(t *testing.T, out map[string]any) {
					require.Equal(t, "HI", out["stdout"])
				}},
				{Name: "allowed_failure", Params: map[string]any{"command": []any{"sh", "-c", "exit 3"}, "allow_failure": true}, Check: func(t *testing.T, out map[string]any) {
					require.Equal(t, 3, out["exit_code"])
				}},
				{Name: "failure", Params: map[string]any{"command": []any{"sh", "-c", "exit 3"}}, Fails: "exit_code"},
			},
			Block: func(t *testing.T) (nodetest.Sample, <-chan struct{}) {
				started := make(chan struct{})
				return nodetest.Sample{Name: "sleeps", Params: map[string]any{"command": []any{"sleep", "30"}}, Call: func(t *testing.T, c *node.Call) {
					c.ProcessStarted = func(int) { close(started) }
				}}, started
			},
		},

		// Kinds whose behaviour lives in the engine: their specs only.
		"endloop":          {},
		"merge":            {},
		"trigger.chat":     {},
		"trigger.manual":   {},
		"trigger.schedule": {},
		"trigger.webhook":  {},

		"if": {Samples: []nodetest.Sample{
			{Name: "true", Params: map[string]any{"condition": "1 + 1 == 2"}, Check: routes("true")},
			{Name: "false", Params: map[string]any{"condition": "1 > 2"}, Check: routes("false")},
		}},
		"switch": {Samples: []nodetest.Sample{
			{Name: "second_case", Params: map[string]any{"cases": []any{
				map[string]any{"name": "small", "condition": "1 > 2"},
				map[string]any{"name": "big", "condition": "2 > 1"},
			}}, Check: routes("big")},
			{Name: "default", Params: map[string]any{"cases": []any{
				map[string]any{"name": "small", "condition": "false"},
			}}, Check: routes("default")},
		}},
		"loop": {Workflow: body, Samples: []nodetest.Sample{
			{Name: "enters_the_body", Params: map[string]any{"exit": "true", "max_iterations": 3}, Check: routes("body")},
			{Name: "leaves_after_a_pass", Params: map[string]any{"exit": "true"}, Call: passes(1), Check: routes("done")},
			{Name: "goes_round_again", Params: map[string]any{"exit": "false"}, Call: passes(2), Check: routes("body")},
		}},
		"foreach": {Workflow: body, Samples: []nodetest.Sample{
			{Name: "list", Params: map[string]any{"items": []any{1, "two", 3}, "concurrency": 2}, Check: func(t *testing.T, out map[string]any) {
				require.Equal(t, []any{1, "two", 3}, out["items"])
			}},
		}},
		"guardrail": {
			Samples: []nodetest.Sample{
				{Name: "condition", Params: map[string]any{"condition": "1 == 1"}, Check: routes("pass")},
				{Name: "judge", Params: map[string]any{"judge": "Is it polite?", "value": "thank you"}, Check: routes("pass")},
			},
			Services: func(t *testing.T) *node.Services { return baseServices(&judge{}) },
			Block: func(t *testing.T) (nodetest.Sample, <-chan struct{}) {
				j := &judge{started: make(chan struct{})}
				return nodetest.Sample{Name: "judge_holds", Params: map[string]any{"judge": "Is it polite?", "value": "x"}, Call: func(t *testing.T, c *node.Call) {
					c.Services = baseServices(j)
				}}, j.started
			},
		},
		"wait": {Samples: []nodetest.Sample{
			{Name: "duration", Params: map[string]any{"duration": "30s"}, Check: func(t *testing.T, out map[string]any) {
				require.Equal(t, int64(30_000), out["waited_ms"])
				require.Equal(t, 30.0, out["_delay_seconds"])
			}},
			{Name: "signal", Params: map[string]any{"until": "signal"}, Check: func(t *testing.T, out map[string]any) {
				require.Equal(t, "signal", out["_await"])
			}},
			{Name: "until_a_time_past", Params: map[string]any{"until": "2020-01-02T15:04:05Z"}, Check: func(t *testing.T, out map[string]any) {
				require.Equal(t, int64(0), out["waited_ms"])
			}},
		}},
		"fail": {Samples: []nodetest.Sample{
			{Name: "message", Params: map[string]any{"message": "stop here"}, Fails: "fail_node"},
		}},
		"subworkflow": {
			Samples: []nodetest.Sample{
				{Name: "child", Params: map[string]any{"workflow": "child.yaml", "inputs": map[string]any{"n": 7}}, Check: func(t *testing.T, out map[string]any) {
					require.Equal(t, map[string]any{"n": 7}, out["inputs"])
				}},
			},
			Files:    map[string]string{"child.yaml": childWorkflow},
			Services: func(t *testing.T) *node.Services { return baseServices(&judge{}) },
			Block: func(t *testing.T) (nodetest.Sample, <-chan struct{}) {
				ch := &children{started: make(chan struct{})}
				return nodetest.Sample{Name: "child_holds", Params: map[string]any{"workflow": "child.yaml"}, Call: func(t *testing.T, c *node.Call) {
					c.Services = node.ChildrenService.Provide(c.Services, ch)
				}}, ch.started
			},
		},
		"set": {Samples: []nodetest.Sample{
			{Name: "values_and_vars", Params: map[string]any{"values": map[string]any{"a": 1, "b": "two"}, "vars": map[string]any{"seen": true}}, Check: func(t *testing.T, out map[string]any) {
				require.Equal(t, 1, out["a"])
				require.Equal(t, map[string]any{"seen": true}, out["_state_patch"])
			}},
			{Name: "vars_only", Params: map[string]any{"vars": map[string]any{"seen": true}}},
		}},
		"template": {Samples: []nodetest.Sample{
			{Name: "text", Params: map[string]any{"text": "hello"}, Check: func(t *testing.T, out map[string]any) {
				require.Equal(t, "hello", out["text"])
			}},
		}},
	}
}

// body is the body a loop or foreach node n needs to be valid.
var body = map[string]any{
	"nodes": []any{map[string]any{"id": "next", "type": "endloop", "loop": "n"}},
	"edges": []any{map[string]any{"from": "n", "to": "next", "on": "body"}},
}

// llmCategories are the categories of a model call's errors.
var llmCategories = []string{llm.CategoryRateLimit, llm.CategoryHTTP, llm.CategoryTimeout, llm.CategoryMalformed, llm.CategoryAuthentication}

// testModel is a model with a list price, so that cost is computed.
const testModel = "gpt-4.1-mini"

// mcpServices are a pool over the MCP server srv, named test, closed when
// the test ends, and the base services.
func mcpServices(t *testing.T, srv *mcptest.Server, s *node.Services) *node.Services {
	pool := mcpclient.NewPool([]*workflow.MCPServer{{Name: "test", URL: srv.URL}}, nil)
	t.Cleanup(func() { _ = pool.Close() })
	if s == nil {
		s = baseServices(&judge{})
	}
	return mcpclient.Service.Provide(s, pool)
}

// aiServices are the MCP pool and a fake OpenAI model that plays script,
// with a spare reply for an answer asked for again.
func aiServices(t *testing.T, tools *mcptest.Server, script ...llmtest.Turn) *node.Services {
	srv := llmtest.NewServer(t, llmtest.OpenAI, append(script, script[len(script)-1]))
	return registry.Service.Provide(mcpServices(t, tools, nil), models(srv))
}

// replies makes the call's model answer text.
func replies(text string) func(t *testing.T, c *node.Call) {
	return func(t *testing.T, c *node.Call) {
		srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply(text), llmtest.Reply(text)})
		c.Services = registry.Service.Provide(c.Services, models(srv))
	}
}

// models is the default model answered by srv.
func models(srv *llmtest.Server) *registry.Models {
	w := &workflow.Workflow{Name: "conformance", LLM: []*workflow.LLMConfig{{
		Name: "default", Provider: "openai", Model: testModel, BaseURL: srv.BaseURL(), APIKey: "test-key",
	}}}
	return registry.New(w, func(string) (string, bool) { return "", false })
}

// holdingModel is a model server whose first request never gets an
// answer, and a channel closed once that request arrived.
func holdingModel(t *testing.T) (*llmtest.Server, <-chan struct{}) {
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{{Hang: true}})
	return srv, arrived(t, func() bool { return srv.Calls() > 0 })
}

// holdingTools is an MCP server whose tool hold waits for its call's end
// (or the test's: a client's cancel notification that the server did not
// match to the call leaves it running, and the server's Close would wait
// for it), and a channel closed once the tool was called.
func holdingTools(t *testing.T) (*mcptest.Server, <-chan struct{}) {
	srv := mcptest.New(t)
	started := make(chan struct{})
	var once sync.Once
	ended := t.Context()
	srv.AddTool("hold", nil, func(ctx context.Context, _ map[string]any) (*sdk.CallToolResult, error) {
		once.Do(func() { close(started) })
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ended.Done():
			return nil, ended.Err()
		}
	})
	return srv, started
}

// arrived returns a channel closed once cond holds, polled until the test
// ends.
func arrived(t *testing.T, cond func() bool) <-chan struct{} {
	ch := make(chan struct{})
	ctx := t.Context()
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for !cond() {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
		close(ch)
	}()
	return ch
}

// webRoutes are what the http kind's samples call.
func webRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok": true}`)
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	})
	return mux
}

// childWorkflow is the workflow a subworkflow sample runs.
const childWorkflow = `version: 1
name: child
inputs:
  n: {type: integer, default: 1}
nodes:
  - id: start
    type: trigger.manual
`

// routes checks a branch's route.
func routes(handle string) func(t *testing.T, out map[string]any) {
	return func(t *testing.T, out map[string]any) {
		t.Helper()
		require.Equal(t, handle, out["_route"], "the route")
	}
}

// passes sets how many times a loop's body has run.
func passes(n int) func(t *testing.T, c *node.Call) {
	return func(_ *testing.T, c *node.Call) { c.Passes = n }
}

// baseServices are what the engine gives every kind: a budget, a way to
// run children, and the judge given.
func baseServices(j *judge) *node.Services {
	s := node.BudgetService.Provide(nil, &engine.Budget{})
	s = node.JudgeService.Provide(s, j)
	return node.ChildrenService.Provide(s, &children{})
}

// judge passes every value; with started set it holds each call until its
// context ends, having closed started.
type judge struct{ started chan struct{} }

func (j *judge) JudgeValue(ctx context.Context, model, prompt string, value any) (bool, string, map[string]any, error) {
	usage := map[string]any{"input_tokens": 10, "output_tokens": 2}
	if j.started != nil {
		close(j.started)
		<-ctx.Done()
	}
	if err := ctx.Err(); err != nil {
		return false, "", nil, node.AsError(err)
	}
	return true, "it is polite", usage, nil
}

// children runs a child workflow by echoing its inputs; with started set
// it holds each run until its context ends, having closed started.
type children struct{ started chan struct{} }

func (c *children) RunChild(ctx context.Context, path string, inputs map[string]any) (map[string]any, error) {
	if c.started != nil {
		close(c.started)
		<-ctx.Done()
	}
	if err := ctx.Err(); err != nil {
		return nil, node.AsError(err)
	}
	return map[string]any{"inputs": inputs}, nil
}
