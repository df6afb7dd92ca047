// One run: its graph with live badges (fed by the run's event stream),
// the verdict bar, the actions the session's scope allows, and the
// selected node's steps, output, error, events and checks.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, EVENT_TYPES } from "./api.js";
import { clock, cost, duration, elapsed, errorMessage, LIVE, time, tokens } from "./format.js";
import { Graph, layout, shownStatus } from "./graph.jsx";
import { JsonTree } from "./json.jsx";
import { StatusPill } from "./runs.jsx";

// REFETCH_MS bounds how often the run's document is read again while
// events arrive (its steps carry outputs, durations, tokens and costs).
// One read at a time, and the next begins at least SPACING times the
// last one's time after it began: a run of tens of thousands of steps
// has a document of tens of MB that takes the server a second to make,
// and watching it keeps the server busy a fifth of the time at most.
const REFETCH_MS = 400;
const SPACING = 5;

const SCOPES = { read: 1, run: 2, edit: 3, admin: 4 };
export const may = (session, want) => (SCOPES[session.scope] || 0) >= SCOPES[want];

// graphOfSteps is the graph of a run stored without its workflow: its
// nodes as the steps name them, without edges.
function graphOfSteps(run) {
  const seen = new Map();
  for (const s of run.steps) if (!seen.has(s.node)) seen.set(s.node, { id: s.node, type: s.type });
  return { nodes: [...seen.values()], edges: [] };
}

// live is what the event stream told: per node its status, visits and
// the seq of its latest event; the handles control nodes chose; the
// events; the signals awaited; the reply a running node's model has
// streamed so far (its llm_delta events, which the timeline leaves out).
function newLive() {
  return { status: {}, visits: {}, seq: {}, taken: {}, events: [], awaiting: {}, text: {}, last: 0 };
}

function apply(live, ev) {
  live.last = ev.seq;
  const n = ev.node;
  if (ev.type === "llm_delta") {
    if (n) live.text[n] = (live.text[n] || "") + ((ev.data && ev.data.text) || "");
    return;
  }
  live.events.push(ev);
  if (!n) return;
  live.seq[n] = ev.seq;
  switch (ev.type) {
    case "node_started":
      live.status[n] = "running";
      live.visits[n] = Math.max(live.visits[n] || 0, ev.visit || 0);
      delete live.text[n];
      break;
    case "node_finished":
      if (ev.data && ev.data.status) live.status[n] = ev.data.status;
      delete live.text[n];
      break;
    // The handles a node chose, over all its visits: a branch's route, a
    // loop's body (each pass) and done.
    case "branch_evaluated":
      (live.taken[n] ||= new Set()).add((ev.data && ev.data.handle) || "");
      break;
    case "loop_iteration":
      (live.taken[n] ||= new Set()).add("body");
      break;
    case "loop_exited":
      (live.taken[n] ||= new Set()).add("done");
      break;
    case "signal_awaited":
      live.status[n] = "waiting";
      live.awaiting[n] = true;
      break;
    case "signal_received":
      live.status[n] = "running";
      delete live.awaiting[n];
      break;
  }
}

// stepStatus is the status a step's duration is read by: a step of a run
// that is not going on is not going on either, whatever it recorded last
// (an interrupted run's step that was running when its process died).
function stepStatus(run, s) {
  return LIVE.has(run.status) ? s.status : run.status;
}

// runStepStatus is the status a step is shown with: one that was under way
// when its run was interrupted (its process died) is shown interrupted,
// as runs show says "running when interrupted".
function runStepStatus(run, s) {
  return run.status === "interrupted" && LIVE.has(s.status) ? "interrupted" : s.status;
}

// nodeStates merges the run's steps with the stream: a node's status is
// the stream's when its latest event came after the document was read.
function nodeStates(run, live, readAt) {
  const st = {};
  for (const s of run.steps) {
    const n = (st[s.node] ||= { visits: 0, duration: 0, tokens: 0, cost: 0, steps: [] });
    n.steps.push(s);
    n.visits = Math.max(n.visits, s.visit);
    n.duration += elapsed(s.started_at, s.finished_at, s.duration_ms, stepStatus(run, s));
    n.tokens += s.tokens || 0;
    n.cost += s.cost_usd || 0;
    n.status = runStepStatus(run, s);
    n.cached = s.cached;
    n.pinned = s.pinned;
  }
  for (const [id, status] of Object.entries(live.status)) {
    const n = (st[id] ||= { visits: 0, duration: 0, tokens: 0, cost: 0, steps: [] });
    n.visits = Math.max(n.visits, live.visits[id] || 0);
    if (!n.status || (live.seq[id] || 0) > readAt) n.status = status;
  }
  return st;
}

function VerdictBar({ verdict }) {
  if (!verdict || !verdict.status) {
    return (
      <div class="verdict none" role="status" aria-label="verdict">
        No checks
      </div>
    );
  }
  const cls = verdict.status === "PASSED" ? "pass" : verdict.status === "FAILED" ? "fail" : "warn";
  const counts = {};
  for (const n of verdict.nodes || []) counts[n.verdict] = (counts[n.verdict] || 0) + 1;
  return (
    <div class={`verdict ${cls}`} role="status" aria-label="verdict">
      <strong>{verdict.status}</strong>
      {Object.entries(counts).map(([v, c]) => (
        <span>
          {" "}
          · {c} {v}
        </span>
      ))}
      {verdict.stopped ? <span> · stopped at {verdict.stopped}</span> : null}
    </div>
  );
}

function eventSummary(ev) {
  const d = ev.data || {};
  const parts = [];
  for (const [k, v] of Object.entries(d)) {
    if (v === null || v === undefined) continue;
    const s = typeof v === "object" ? JSON.stringify(v) : String(v);
    parts.push(`${k}=${s.length > 120 ? s.slice(0, 119) + "…" : s}`);
  }
  return parts.join(" ");
}

function Timeline({ events }) {
  if (events.length === 0) return <p class="muted">No events.</p>;
  return (
    <ol class="timeline">
      {events.map((ev) => (
        <li key={ev.seq} class={`ev ev-${ev.type}`} data-type={ev.type}>
          <span class="t">{clock(ev.time)}</span> <span class="type">{ev.type}</span>
          {ev.node ? <span class="node"> {ev.node}</span> : null}
          {ev.visit ? <span class="muted"> #{ev.visit}</span> : null} <span class="data">{eventSummary(ev)}</span>
        </li>
      ))}
    </ol>
  );
}

function ErrorView({ error }) {
  const details = error.details || {};
  const { stderr, stdout } = details;
  const rest = { ...details };
  delete rest.stderr;
  delete rest.stdout;
  return (
    <div class="err" role="group" aria-label="error">
      <p>
        {error.code ? <code class="code">{error.code}</code> : null}
        {error.node ? <span class="err-node"> in node {error.node}</span> : null}
        {error.code || error.node ? ": " : null}
        <strong>{errorMessage(error)}</strong>
        {error.category ? <span class="muted"> · {error.category}</span> : null}
      </p>
      {stderr ? (
        <>
          <h5>stderr</h5>
          <pre class="stderr">{String(stderr)}</pre>
        </>
      ) : null}
      {stdout ? (
        <>
          <h5>stdout</h5>
          <pre class="stdout">{String(stdout)}</pre>
        </>
      ) : null}
      {Object.keys(rest).length ? <JsonTree value={rest} label="error details" /> : null}
    </div>
  );
}

// RunSummary leads a run's page: what went in, and what came out — the
// outputs, or the run's error (its code, node and message).
function RunSummary({ run }) {
  const inputs = run.inputs && Object.keys(run.inputs).length ? run.inputs : null;
  return (
    <div class="run-summary">
      <section class="run-inputs" aria-labelledby="run-in-h">
        <h2 id="run-in-h">Inputs</h2>
        {inputs ? <JsonTree value={inputs} label="run inputs" runID={run.execution_id} /> : <p class="muted">No inputs.</p>}
      </section>
      {run.error ? (
        <section class="run-error" aria-labelledby="run-err-h">
          <h2 id="run-err-h">Error</h2>
          <ErrorView error={run.error} />
        </section>
      ) : (
        <section class="run-outputs" aria-labelledby="run-out-h">
          <h2 id="run-out-h">Outputs</h2>
          {run.outputs && Object.keys(run.outputs).length ? (
            <JsonTree value={run.outputs} label="run outputs" runID={run.execution_id} />
          ) : (
            <p class="muted">{LIVE.has(run.status) ? `None yet: the run is ${run.status}.` : "No outputs."}</p>
          )}
        </section>
      )}
    </div>
  );
}

function ApproveForm({ run, node, onDone }) {
  const [text, setText] = useState('{"approved": true}');
  const [err, setErr] = useState("");
  const [busy, setBusy] = useState(false);
  const send = async (e) => {
    e.preventDefault();
    let data;
    try {
      data = JSON.parse(text);
    } catch (x) {
      setErr(`Not JSON: ${x.message}`);
      return;
    }
    setBusy(true);
    try {
      await api("POST", `/api/runs/${encodeURIComponent(run.execution_id)}/signals/${encodeURIComponent(node)}`, data);
      setErr("");
      onDone();
    } catch (x) {
      setErr(x.message);
    }
    setBusy(false);
  };
  const id = `signal-${node}`;
  return (
    <form class="approve" onSubmit={send}>
      <label for={id}>Signal for {node} (JSON)</label>
      <textarea id={id} rows="3" value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <button type="submit" disabled={busy} class="primary">
        Approve {node}
      </button>
      {err ? <p role="alert" class="error">{err}</p> : null}
    </form>
  );
}

// Artifacts lists the files a node saved: images shown, every file a
// download.
function Artifacts({ run, node }) {
  const [list, setList] = useState(null);
  useEffect(() => {
    let stop = false;
    api("GET", `/api/runs/${encodeURIComponent(run.execution_id)}/artifacts`).then(
      (d) => !stop && setList(d.artifacts.filter((a) => a.node === node)),
      () => !stop && setList([]),
    );
    return () => {
      stop = true;
    };
  }, [run.execution_id, node, run.status, run.steps.length]);
  if (!list || list.length === 0) return null;
  return (
    <>
      <h3>Artifacts</h3>
      <ul class="artifacts">
        {list.map((a) => (
          <li key={a.name}>
            {a.content_type.startsWith("image/") ? <img src={a.url} alt={`artifact ${a.name} of ${node}`} loading="lazy" /> : null}
            <a href={a.url} download={a.name}>
              {a.name}
            </a>{" "}
            <span class="muted">{a.size} bytes</span>
          </li>
        ))}
      </ul>
    </>
  );
}

// skipText says why a step was skipped.
function skipText(s) {
  switch (s.skip_reason) {
    case "branch_not_taken":
      return s.taken_handle ? `its branch took ${s.taken_handle}` : "its branch took another handle";
    case "upstream_failed":
      return "a node before it failed";
    case "dead_path":
      return "the nodes before it were skipped";
    case "disabled":
      return "the node is disabled";
    case "run_failed":
      return "the run failed first";
    case "item_failed":
      return "its foreach item failed";
    default:
      return s.skip_reason;
  }
}

function NodePanel({ run, graph, id, st, events, verdicts, awaiting, streaming, session, refresh }) {
  const n = graph.nodes.find((x) => x.id === id) || { id, type: "" };
  const steps = (st && st.steps) || [];
  return (
    <section class="panel" aria-labelledby="panel-h" data-panel-node={id}>
      <h2 id="panel-h">
        {id} <span class="muted">{n.type}</span> <StatusPill status={shownStatus(st)} />
      </h2>
      {n.name ? <p>{n.name}</p> : null}
      {awaiting && may(session, "run") ? <ApproveForm run={run} node={id} onDone={refresh} /> : null}
      {streaming ? (
        <>
          <h3>Reply so far</h3>
          <pre class="streaming" aria-live="polite">
            {streaming}
          </pre>
        </>
      ) : null}
      <h3>Steps</h3>
      {steps.length === 0 ? <p class="muted">Not run yet.</p> : null}
      {steps.map((s, i) => (
        <details class="step" open={i === steps.length - 1} key={`${s.visit}-${i}`}>
          <summary>
            <span class="muted">#{s.step_order}</span> Visit {s.visit}
            {s.iteration ? `, iteration ${s.iteration}` : ""} · {s.attempts} attempt{s.attempts === 1 ? "" : "s"} ·{" "}
            <StatusPill status={s.pinned ? "pinned" : s.cached ? "cached" : runStepStatus(run, s)} />{" "}
            {duration(elapsed(s.started_at, s.finished_at, s.duration_ms, stepStatus(run, s)))} {tokens(s.tokens)} {cost(s.cost_usd)}
            {s.confidence_score != null ? (
              <span class="confidence" title="confidence_score: the confidence the node reported">
                {" "}
                · confidence {s.confidence_score.toFixed(2)}
              </span>
            ) : null}
          </summary>
          <div class="step-body">
            <p class="muted">
              {time(s.started_at)}
              {s.finished_at ? ` → ${time(s.finished_at)}` : ""}
            </p>
            {s.skip_reason ? (
              <p class="skip-reason" data-skip-reason={s.skip_reason}>
                Skipped: {skipText(s)}
              </p>
            ) : null}
            {s.ran_on ? (
              <p class="muted ran-on">
                Ran on {s.ran_on.worker ? `worker ${s.ran_on.worker}` : `${s.ran_on.host} (pid ${s.ran_on.pid})`}
              </p>
            ) : null}
            {s.params ? (
              <>
                <h4>Parameters</h4>
                <JsonTree value={s.params} label="parameters" runID={run.execution_id} />
              </>
            ) : null}
            <h4>Output</h4>
            {s.output == null ? <p class="muted">No output.</p> : <JsonTree value={s.output} label="output" runID={run.execution_id} />}
            {s.error ? (
              <>
                <h4>Error</h4>
                <ErrorView error={s.error} />
              </>
            ) : null}
          </div>
        </details>
      ))}
      {verdicts.length ? (
        <>
          <h3>Checks</h3>
          <ul class="checks">
            {verdicts.flatMap((v) =>
              (v.checks || []).map((c) => (
                <li class={`check v-${c.verdict}`}>
                  <StatusPill status={c.verdict} /> {c.check || c.type} {c.reasoning ? <span class="muted">— {c.reasoning}</span> : null}
                </li>
              )),
            )}
          </ul>
        </>
      ) : null}
      <Artifacts run={run} node={id} />
      <h3>Events</h3>
      <Timeline events={events} />
    </section>
  );
}

export function RunPage({ id, session }) {
  const [run, setRun] = useState(null);
  const [graph, setGraph] = useState(null);
  const [error, setError] = useState("");
  const [selected, setSelected] = useState(null);
  const [pinMode, setPinMode] = useState(false);
  const [pins, setPins] = useState(new Set());
  const [note, setNote] = useState("");
  const [, setTick] = useState(0);
  const live = useRef(newLive());
  const readAt = useRef(0);
  const refetch = useRef(null);

  useEffect(() => {
    live.current = newLive();
    readAt.current = 0;
    setRun(null);
    setGraph(null);
    setSelected(null);
    setPins(new Set());
    setPinMode(false);
    let stop = false;
    let frame = 0;
    let timer = 0;
    let lastRead = 0;
    let spacing = REFETCH_MS;
    let reading = false;
    let again = false;
    const read = async () => {
      const at = live.current.last;
      lastRead = Date.now();
      reading = true;
      try {
        const r = await api("GET", `/api/runs/${encodeURIComponent(id)}`);
        if (stop) return;
        readAt.current = at;
        setRun(r);
        return r;
      } catch (e) {
        if (!stop) setError(e.message);
      } finally {
        reading = false;
        spacing = Math.max(REFETCH_MS, SPACING * (Date.now() - lastRead));
        if (again && !stop) {
          again = false;
          schedule();
        }
      }
    };
    // schedule reads the run again once the read under way (if any) is
    // answered, at most every spacing.
    const schedule = () => {
      if (timer) return;
      if (reading) {
        again = true;
        return;
      }
      timer = setTimeout(() => {
        timer = 0;
        read();
      }, Math.max(0, spacing - (Date.now() - lastRead)));
    };
    refetch.current = schedule;
    const render = () => {
      if (!frame) frame = requestAnimationFrame(() => ((frame = 0), setTick((t) => t + 1)));
    };
    let es = null;
    read().then(async (r) => {
      if (!r || stop) return;
      try {
        const g = await api("GET", `/api/runs/${encodeURIComponent(id)}/graph`);
        if (!stop) setGraph(g);
      } catch {
        if (!stop) setGraph(graphOfSteps(r));
      }
      if (stop) return;
      es = new EventSource(`/api/runs/${encodeURIComponent(id)}/events`);
      const on = (msg) => {
        let ev;
        try {
          ev = JSON.parse(msg.data);
        } catch {
          return;
        }
        if (ev.seq <= live.current.last) return;
        apply(live.current, ev);
        if (ev.type !== "node_started" && ev.type !== "branch_evaluated") schedule();
        render();
      };
      for (const t of EVENT_TYPES) es.addEventListener(t, on);
      es.onmessage = on;
      es.addEventListener("end", () => {
        es.close();
        schedule();
      });
    });
    return () => {
      stop = true;
      clearTimeout(timer);
      cancelAnimationFrame(frame);
      if (es) es.close();
    };
  }, [id]);

  const lay = useMemo(() => (graph ? layout(graph) : null), [graph]);

  if (error && !run) return <p role="alert" class="error">{error}</p>;
  if (!run || !graph || !lay) return <p aria-busy="true">Loading run {id}…</p>;

  const states = nodeStates(run, live.current, readAt.current);
  const took = duration(elapsed(run.started_at, run.finished_at, run.duration_ms, run.status));
  const isLive = LIVE.has(run.status);
  const awaiting = Object.keys(live.current.awaiting).filter((n) => {
    const s = states[n];
    return s && s.status === "waiting";
  });
  const canRun = may(session, "run");

  const act = async (what, path, body, open) => {
    setNote("");
    try {
      const r = await api("POST", path, body);
      setNote(`${what}: ${r.status || "done"}`);
      if (open && r.execution_id && r.execution_id !== id) {
        location.hash = `#/runs/${r.execution_id}`;
        return;
      }
      refetch.current();
    } catch (e) {
      setNote(`${what} failed: ${e.message}`);
    }
  };
  const onSelect = (node) => {
    if (pinMode) {
      const next = new Set(pins);
      next.has(node) ? next.delete(node) : next.add(node);
      setPins(next);
      return;
    }
    setSelected(node === selected ? null : node);
  };

  return (
    <section aria-labelledby="run-h" class="run" data-run={run.execution_id} data-status={run.status}>
      <div class="run-head">
        <h1 id="run-h">
          {run.workflow} <span class="mono muted">{run.execution_id}</span> <StatusPill status={run.status} />
        </h1>
        <p class="facts">
          Started {time(run.started_at)}
          {took ? ` · ${took}` : ""}
          {run.tokens ? ` · ${tokens(run.tokens)}` : ""}
          {run.cost_usd ? ` · ${cost(run.cost_usd)}` : ""}
          {run.trigger ? ` · trigger ${run.trigger}` : ""}
          {run.parent_id ? (
            <>
              {" "}
              · parent <a href={`#/runs/${run.parent_id}`}>{run.parent_id}</a>
            </>
          ) : null}
          {run.replay_of ? (
            <>
              {" "}
              · replay of{" "}
              <a href={`#/runs/${run.replay_of}`} class="replay-of">
                {run.replay_of}
              </a>
            </>
          ) : null}
        </p>
        {canRun ? (
          <div class="actions" role="toolbar" aria-label="Run actions">
            {isLive ? (
              <button type="button" class="danger" onClick={() => act("Cancel", `/api/runs/${encodeURIComponent(id)}/cancel?wait=5s`)}>
                Cancel run
              </button>
            ) : null}
            {["failed", "cancelled", "interrupted"].includes(run.status) ? (
              <button type="button" onClick={() => act("Resume", `/api/runs/${encodeURIComponent(id)}/resume`, {})}>
                Resume
              </button>
            ) : null}
            {!isLive ? (
              <>
                <button type="button" aria-pressed={pinMode ? "true" : "false"} onClick={() => setPinMode(!pinMode)}>
                  {pinMode ? "Done choosing pins" : "Choose pins"}
                </button>
                <button type="button" class="primary" onClick={() => act("Re-run", `/api/runs/${encodeURIComponent(id)}/rerun`, { pins: [...pins] }, true)}>
                  Re-run{pins.size ? ` with ${pins.size} pinned` : ""}
                </button>
              </>
            ) : null}
          </div>
        ) : null}
        {pinMode ? <p class="hint">Select the nodes whose outputs the re-run reuses: {[...pins].join(", ") || "none yet"}.</p> : null}
        {note ? (
          <p role="status" class="note">
            {note}
          </p>
        ) : null}
        <RunSummary run={run} />
        <VerdictBar verdict={run.verdict} />
        {awaiting.length && canRun && !awaiting.includes(selected) ? (
          <p class="hint">
            Waiting for a signal:{" "}
            {awaiting.map((n) => (
              <button type="button" class="link" onClick={() => setSelected(n)}>
                {n}
              </button>
            ))}
          </p>
        ) : null}
      </div>
      <div class="run-body">
        <Graph
          graph={graph}
          lay={lay}
          states={states}
          taken={live.current.taken}
          selected={selected}
          pins={pins}
          onSelect={onSelect}
          label={`graph of run ${run.execution_id}`}
        />
        {selected ? (
          <NodePanel
            run={run}
            graph={graph}
            id={selected}
            st={states[selected]}
            events={live.current.events.filter((e) => e.node === selected)}
            verdicts={((run.verdict && run.verdict.nodes) || []).filter((v) => v.node === selected)}
            awaiting={awaiting.includes(selected)}
            streaming={live.current.text[selected]}
            session={session}
            refresh={() => refetch.current()}
          />
        ) : (
          <section class="panel" aria-labelledby="ev-h">
            <h2 id="ev-h">Events</h2>
            <p class="muted">Select a node to see its steps.</p>
            <Timeline events={live.current.events.slice(-200)} />
          </section>
        )}
      </div>
    </section>
  );
}
