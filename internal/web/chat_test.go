package web_test

import (
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// TestChatStreamsInThePage: the chat page shows the model's first words
// while the model is still answering (the fake holds its stream open
// until the page showed them), then the whole reply, with a link to its
// run.
func TestChatStreamsInThePage(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	reply := "Hi, there, streaming friend."
	hold := make(chan struct{})
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: reply, Usage: llm.Usage{InputTokens: 12, OutputTokens: 6}, Hold: hold},
	})
	release := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release)
	s := serve(t, map[string]string{"talk.yaml": `version: 1
name: talk
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "` + model.BaseURL() + `", api_key: test}
nodes:
  - {id: chat, type: trigger.chat}
  - {id: answer, type: llm, prompt: "{{ chat.message }}"}
edges:
  - {from: chat, to: answer}
outputs:
  reply: "{{ answer.text }}"
`})
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/chat/talk"), chromedp.WaitVisible("#chat-msg"))
	fill(t, ctx, "#chat-msg", "hi")
	do(t, ctx, chromedp.Click(`section.chat button[type="submit"]`))

	// The first words, while the model holds the rest back.
	until(t, ctx, `[...document.querySelectorAll(".msg.assistant")].some(m => m.textContent.includes("Hi,"))`)
	shown := eval[string](t, ctx, `document.querySelector(".msg.assistant").textContent`)
	require.NotContains(t, shown, "friend", "only part of the reply is shown before the model finished")
	require.Equal(t, "Waiting for the reply…", eval[string](t, ctx, `document.querySelector("section.chat button[type=submit]").textContent`))

	release()
	until(t, ctx, `[...document.querySelectorAll(".msg.assistant")].some(m => m.textContent.includes("`+reply+`") && m.querySelector("a[href^='#/runs/']"))`)
	require.Equal(t, "Send", eval[string](t, ctx, `document.querySelector("section.chat button[type=submit]").textContent`))
}
