// The HTTP API of skein serve, as the page calls it: JSON in and out,
// the session cookie sent by the browser, the CSRF token added to every
// request that may change something.

let csrf = "";
let unauthorized = () => {};

export function setCSRF(token) {
  csrf = token || "";
}

// onUnauthorized sets what happens when the API answers 401: the page
// shows the sign-in form again.
export function onUnauthorized(fn) {
  unauthorized = fn;
}

export class APIError extends Error {
  constructor(status, problem, text) {
    super((problem && (problem.detail || problem.title)) || text || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

// api calls the API and answers the decoded JSON; headers are extra
// request headers (If-Match).
export async function api(method, path, body, extra) {
  const headers = { Accept: "application/json", ...(extra || {}) };
  const init = { method, headers, credentials: "same-origin" };
  if (body !== undefined) {
    if (!headers["Content-Type"]) headers["Content-Type"] = "application/json";
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  if (method !== "GET" && csrf) headers["X-Skein-CSRF"] = csrf;
  const res = await fetch(path, init);
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    if (res.status === 401 && path !== "/api/session") unauthorized();
    throw new APIError(res.status, data, text);
  }
  return data;
}

// EVENT_TYPES are the event types of a run's stream the page listens to
// (an EventSource hears named events only by name).
export const EVENT_TYPES = [
  "execution_started", "execution_finished", "execution_parked", "execution_left", "execution_resumed",
  "node_started", "node_finished", "branch_evaluated", "variable_set", "retry",
  "loop_iteration", "loop_exited", "warning", "signal_awaited", "signal_received",
  "tool_call", "tool_result", "llm_call", "vision_summary", "check_verdict",
  "delivery_attempt", "delivery_succeeded", "delivery_failed", "repair", "repair_usage", "artifact",
  "llm_delta", "tool_progress", "output_truncated", "resolved", "model_fallback", "tool_approval",
];

// stream posts body to path asking for Server-Sent Events and calls
// onEvent(name, data) for each event as it arrives; it resolves when the
// server ends the stream.
export async function stream(path, body, onEvent) {
  const headers = { Accept: "text/event-stream", "Content-Type": "application/json" };
  if (csrf) headers["X-Skein-CSRF"] = csrf;
  const res = await fetch(path, { method: "POST", headers, credentials: "same-origin", body: JSON.stringify(body) });
  if (!res.ok) {
    const text = await res.text();
    let problem = null;
    try {
      problem = text ? JSON.parse(text) : null;
    } catch {
      problem = null;
    }
    if (res.status === 401) unauthorized();
    throw new APIError(res.status, problem, text);
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}
