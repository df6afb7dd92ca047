// A conversation with a workflow that has a chat trigger: each message
// is a run; its output `reply` is the answer, shown as the run's models
// stream it (delta events) and replaced by the reply when the run ends.
import { useState } from "preact/hooks";
import { stream } from "./api.js";

export function ChatPage({ name }) {
  const [conversation, setConversation] = useState("");
  const [messages, setMessages] = useState([]);
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const send = async (e) => {
    e.preventDefault();
    if (!text.trim()) return;
    const mine = { role: "user", content: text };
    setMessages((m) => [...m, mine]);
    setText("");
    setBusy(true);
    setError("");
    try {
      const body = { message: mine.content };
      if (conversation) body.conversation = conversation;
      let index = -1;
      const show = (content, run) =>
        setMessages((m) => {
          const next = [...m];
          if (index < 0) {
            index = next.length;
            next.push({ role: "assistant", content, run });
          } else {
            next[index] = { ...next[index], content, run: run || next[index].run };
          }
          return next;
        });
      let partial = "";
      await stream(`/api/chat/${encodeURIComponent(name)}?wait=2m`, body, (event, data) => {
        if (event === "run") {
          setConversation(data.conversation || conversation);
          show("…", data.execution_id);
        } else if (event === "delta") {
          partial += data.text || "";
          show(partial);
        } else if (event === "end") {
          const reply =
            data.reply === undefined || data.reply === null
              ? `(${data.status}${data.status === "running" ? ": still running" : ""})`
              : typeof data.reply === "string"
                ? data.reply
                : JSON.stringify(data.reply);
          show(reply, data.execution_id);
        }
      });
    } catch (x) {
      setError(x.message);
    }
    setBusy(false);
  };
  return (
    <section aria-labelledby="chat-h" class="chat">
      <h1 id="chat-h">Chat with {name}</h1>
      <ol class="messages" aria-live="polite">
        {messages.map((m, i) => (
          <li key={i} class={`msg ${m.role}`}>
            <span class="sr-only">{m.role === "user" ? "You" : name}: </span>
            {m.content}
            {m.run ? (
              <>
                {" "}
                <a href={`#/runs/${m.run}`} class="muted">run {m.run}</a>
              </>
            ) : null}
          </li>
        ))}
      </ol>
      <form onSubmit={send}>
        <label for="chat-msg">Message</label>
        <textarea
          id="chat-msg"
          rows="2"
          value={text}
          aria-describedby="chat-keys"
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => {
            // Enter sends; Shift+Enter (and Enter while an IME composes) breaks the line.
            if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
              e.preventDefault();
              if (!busy) e.currentTarget.form.requestSubmit();
            }
          }}
        />
        <span id="chat-keys" class="muted">
          Enter sends, Shift+Enter breaks the line.
        </span>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Waiting for the reply…" : "Send"}
        </button>
      </form>
      {error ? <p role="alert" class="error">{error}</p> : null}
    </section>
  );
}
