export function duration(ms) {
  if (ms == null || Number.isNaN(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} m`;
}

export function cost(usd) {
  if (!usd) return "";
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

export function tokens(n) {
  if (!n) return "";
  return n >= 10000 ? `${(n / 1000).toFixed(1)}k tok` : `${n} tok`;
}

export function time(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" });
}

export function clock(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleTimeString(undefined, { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

export const LIVE = new Set(["pending", "running", "waiting"]);

// elapsed is the duration of a run or step: finished − started, or now −
// started while it goes on. One that is not going on (given its status:
// an interrupted run, whose process died) has the duration it recorded,
// and none (null: nothing is shown) when it recorded no end.
export function elapsed(started, finished, ms, status) {
  if (ms) return ms;
  if (!started) return 0;
  if (!finished && status !== undefined && !LIVE.has(status)) return null;
  return (finished ? new Date(finished) : new Date()) - new Date(started);
}

// count is a whole number as the runs list shows it: 0, 1,234.
export function count(n) {
  return Math.round(n || 0).toLocaleString("en-US");
}

// usd is a cost as the runs list shows it: $0.00, $0.0042, $1.25.
export function usd(v) {
  const x = v || 0;
  return `$${x.toFixed(x > 0 && x < 0.01 ? 4 : 2)}`;
}

// errorMessage is an error's message without the "node X: " it may begin
// with, for where the page names the node already.
export function errorMessage(error) {
  const m = String(error.message || "");
  const lead = error.node ? `node ${error.node}: ` : "";
  return lead && m.startsWith(lead) ? m.slice(lead.length) : m;
}
