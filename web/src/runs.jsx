// The runs list: newest first, filtered by workflow and status, paged by
// the API's cursor, refreshed every two seconds while the page is shown.
import { useEffect, useState } from "preact/hooks";
import { api } from "./api.js";
import { count, duration, elapsed, time, usd } from "./format.js";

const STATUSES = ["pending", "running", "waiting", "completed", "failed", "cancelled", "interrupted"];
const REFRESH_MS = 2000;

export function StatusPill({ status }) {
  return <span class={`pill s-${status}`}>{status}</span>;
}

// SOURCES names how a run was started (its source) in the Trigger column:
// the command line's runs are manual ones.
const SOURCES = { cli: "manual", api: "api", webhook: "webhook", schedule: "schedule", chat: "chat", mcp: "mcp", replay: "replay", editor: "editor" };

// triggerKind is how a run was started — manual, api, webhook, schedule,
// chat, mcp, replay — from its source; for a run that records none (a
// child run, or one recorded before sources were kept), from the type of
// its trigger node in the served workflow (a run that names none started
// at the workflow's only trigger); else the trigger node's id, if the run
// names one.
function triggerKind(r, triggers) {
  if (r.source) return SOURCES[r.source] || r.source;
  const of = triggers[r.workflow] || [];
  const t = r.trigger ? of.find((x) => x.id === r.trigger) : of.length === 1 ? of[0] : null;
  return t ? t.type.replace(/^trigger\./, "") : r.trigger || "";
}

export function RunsPage({ query }) {
  const [workflows, setWorkflows] = useState([]);
  const [triggers, setTriggers] = useState({});
  const [workflow, setWorkflow] = useState(query.get("workflow") || "");
  const [status, setStatus] = useState(query.get("status") || "");
  const [cursors, setCursors] = useState([""]); // the cursor of each page up to this one
  const [page, setPage] = useState(null);
  const [error, setError] = useState("");

  useEffect(() => {
    api("GET", "/api/workflows").then(
      (d) => {
        setWorkflows(d.workflows.map((w) => w.name));
        setTriggers(Object.fromEntries(d.workflows.map((w) => [w.name, w.triggers])));
      },
      () => {},
    );
  }, []);

  const cursor = cursors[cursors.length - 1];
  useEffect(() => {
    let stop = false;
    let timer = 0;
    const load = async () => {
      const q = new URLSearchParams({ limit: "25" });
      if (workflow) q.set("workflow", workflow);
      if (status) q.set("status", status);
      if (cursor) q.set("cursor", cursor);
      try {
        const d = await api("GET", `/api/runs?${q}`);
        if (!stop) {
          setPage(d);
          setError("");
        }
      } catch (e) {
        if (!stop) setError(e.message);
      }
      if (!stop) timer = setTimeout(load, REFRESH_MS);
    };
    load();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [workflow, status, cursor]);

  const filter = (set) => (ev) => {
    set(ev.currentTarget.value);
    setCursors([""]);
  };

  return (
    <section aria-labelledby="runs-h">
      <h1 id="runs-h">Runs</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Workflow{" "}
          <select value={workflow} onChange={filter(setWorkflow)} name="workflow">
            <option value="">all</option>
            {workflows.map((w) => (
              <option value={w}>{w}</option>
            ))}
          </select>
        </label>
        <label>
          Status{" "}
          <select value={status} onChange={filter(setStatus)} name="status">
            <option value="">all</option>
            {STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
      </form>
      {error ? <p role="alert" class="error">{error}</p> : null}
      {page && page.runs.length === 0 ? <p>No runs{workflow || status ? " match these filters" : " yet"}.</p> : null}
      {page && page.runs.length > 0 ? (
        <table class="runs">
          <caption class="sr-only">Runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Workflow</th>
              <th scope="col">Status</th>
              <th scope="col">Trigger</th>
              <th scope="col">Started</th>
              <th scope="col">Duration</th>
              <th scope="col" class="num">Tokens</th>
              <th scope="col" class="num">Cost</th>
              <th scope="col">Verdict</th>
            </tr>
          </thead>
          <tbody>
            {page.runs.map((r) => (
              <tr key={r.execution_id} data-run={r.execution_id} data-status={r.status}>
                <td>
                  <a href={`#/runs/${r.execution_id}`} class="mono">{r.execution_id}</a>
                </td>
                <td>{r.workflow}</td>
                <td>
                  <StatusPill status={r.status} />
                </td>
                <td class="trigger">
                  <span class="kind">{triggerKind(r, triggers)}</span>
                  {r.replay_of ? (
                    <>
                      {" of "}
                      <a href={`#/runs/${r.replay_of}`} class="mono replay-of" title={`a replay of run ${r.replay_of}`}>
                        {r.replay_of}
                      </a>
                    </>
                  ) : null}
                </td>
                <td>{time(r.started_at)}</td>
                <td>{duration(elapsed(r.started_at, r.finished_at, r.duration_ms, r.status))}</td>
                <td class="num tokens">{count(r.tokens)}</td>
                <td class="num cost">{usd(r.cost_usd)}</td>
                <td class="verdict-cell" data-verdict={r.verdict || ""}>{r.verdict || ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <nav class="pager" aria-label="Pages of runs">
        <button type="button" disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
          Newer
        </button>
        <span>Page {cursors.length}</span>
        <button type="button" disabled={!page || !page.next} onClick={() => setCursors([...cursors, page.next])}>
          Older
        </button>
      </nav>
    </section>
  );
}
