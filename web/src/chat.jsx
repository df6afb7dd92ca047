// A conversation with a workflow that has a chat trigger: each message
// is a run; its output `reply` is the answer.
import { useState } from "preact/hooks";
import { api } from "./api.js";

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
      const r = await api("POST", `/api/chat/${encodeURIComponent(name)}?wait=2m`, body);
      setConversation(r.conversation || conversation);
      const reply = r.reply === undefined ? `(${r.status}: still running)` : typeof r.reply === "string" ? r.reply : JSON.stringify(r.reply);
      setMessages((m) => [...m, { role: "assistant", content: reply, run: r.execution_id }]);
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
        <textarea id="chat-msg" rows="2" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Waiting for the reply…" : "Send"}
        </button>
      </form>
      {error ? <p role="alert" class="error">{error}</p> : null}
    </section>
  );
}
