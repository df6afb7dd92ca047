// Package registry resolves the model names of a workflow's llm: section
// into providers, once per run: Models, made by New, with the environment
// fallbacks of llm.Resolve (SKEIN_LLM_*, OPENAI_API_KEY,
// ANTHROPIC_API_KEY). A name the workflow does not declare falls back: judge
// and repair to vision, then default; any other name but vision to default.
//
// Models also prices what a model's replies used (the workflow's price:
// entries first, then the prices Skein knows), checks names before a run
// (Check, Priced), and asks the small structured questions kinds put to a
// model: a guardrail's judge (JudgeValue, the node.Judge service) and an mcp
// node's resolve: (PickItem).
//
// The AI kinds find a run's Models under Service; the host (the runner)
// provides it. The judge of checks (internal/check/judge) asks its model
// through the same Models.
package registry
