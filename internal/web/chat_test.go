package web_test

import (
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// heldModel is a fake OpenAI server that streams reply's first piece and
// holds the rest until release is called (or the test ends); entry is its
// llm: section for a workflow.
func heldModel(t *testing.T, reply string) (entry string, release func()) {
	t.Helper()
	hold := make(chan struct{})
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: reply, Usage: llm.Usage{InputTokens: 12, OutputTokens: 6}, Hold: hold},
	})
	release = sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release)
	return `llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "` + model.BaseURL() + `", api_key: test}
`, release
}

// TestChatStreamsInThePage: the chat page shows the model's first words
// while the model is still answering (the fake holds its stream open
// until the page showed them), then the whole reply, with a link to its
// run.
func TestChatStreamsInThePage(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	reply := "Hi, there, streaming friend."
	llmEntry, release := heldModel(t, reply)
	s := serve(t, map[string]string{"talk.yaml": `version: 1
name: talk
` + llmEntry + `nodes:
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
	until(t, ctx, `document.querySelector("section.chat button[type=submit]").textContent === "Send"`)
}

// TestRunPageShowsAStreamingReply: a running llm node's panel shows the
// reply as the model streams it (its llm_delta events), then its output.
func TestRunPageShowsAStreamingReply(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	reply := "So far, then finished." // the fake streams 4 characters a piece
	llmEntry, release := heldModel(t, reply)
	s := serve(t, map[string]string{"tell.yaml": `version: 1
name: tell
` + llmEntry + `nodes:
  - {id: start, type: trigger.manual}
  - {id: answer, type: llm, prompt: "write"}
edges:
  - {from: start, to: answer}
`})
	s.signIn(ctx)
	id := s.start("tell")
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+id), chromedp.WaitVisible(`g.node[data-node="answer"]`))
	do(t, ctx, chromedp.Click(`g.node[data-node="answer"]`))
	until(t, ctx, `(document.querySelector("pre.streaming") || {textContent: ""}).textContent === "So "`)
	require.NotContains(t, eval[string](t, ctx, `document.querySelector("pre.streaming").textContent`), "finished",
		"only what the model wrote so far")
	require.Equal(t, "running", eval[string](t, ctx, `document.querySelector('g.node[data-node="answer"]').dataset.status`))
	require.False(t, eval[bool](t, ctx, `[...document.querySelectorAll(".timeline li")].some(li => li.dataset.type === "llm_delta")`),
		"the pieces are not events of the timeline")

	release()
	until(t, ctx, `document.querySelector('g.node[data-node="answer"][data-status="success"]') && !document.querySelector("pre.streaming")`)
	until(t, ctx, `document.querySelector('section.panel').textContent.includes("`+reply+`")`)
}

// TestChatKeys: in the chat box Enter sends the message and Shift+Enter
// breaks the line.
func TestChatKeys(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	ctx := browser(t)
	s.signIn(ctx)
	do(t, ctx, chromedp.Navigate(s.url+"/#/chat/chat"), chromedp.WaitVisible("#chat-msg"))
	require.Contains(t, eval[string](t, ctx, `document.querySelector("section.chat form").innerText`), "Enter sends, Shift+Enter breaks the line.")
	do(t, ctx,
		chromedp.Focus("#chat-msg"),
		chromedp.KeyEvent("first"),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.KeyEvent("second"),
	)
	require.Equal(t, "first\nsecond", eval[string](t, ctx, `document.querySelector("#chat-msg").value`), "Shift+Enter breaks the line")
	require.Zero(t, eval[int](t, ctx, `document.querySelectorAll(".msg").length`), "nothing is sent yet")

	do(t, ctx, pressEnter())
	until(t, ctx, `[...document.querySelectorAll(".msg.assistant")].some(m => m.textContent.includes("you said first\nsecond; before: "))`)
	require.Equal(t, "first\nsecond", eval[string](t, ctx, `document.querySelector(".msg.user").lastChild.textContent`))
	require.Equal(t, "", eval[string](t, ctx, `document.querySelector("#chat-msg").value`), "the box is emptied")
}
