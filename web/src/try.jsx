// Trying a draft from the editor (POST /api/workflows/{name}/try): Run
// runs the editor's text, saved or not, with an inputs form made from the
// inputs the draft declares; "Run this node" runs the selected node alone,
// the nodes upstream of it pinned to an earlier run's outputs. Each shows
// its run as it goes (GET /api/runs/{id}, refreshed on its events) and
// links to the run's page.
import { useEffect, useMemo, useState } from "preact/hooks";
import { parse as parseYAML } from "yaml";
import { api } from "./api.js";
import { errorMessage, LIVE, time } from "./format.js";
import { JsonTree } from "./json.jsx";
import { StatusPill } from "./runs.jsx";

// draftInputs reads the inputs a draft declares, as the decoder does: a
// map of names to {type, required, default, description, enum}, or to a
// type name; the type is string by default.
export function draftInputs(text) {
  let doc;
  try {
    doc = parseYAML(text);
  } catch {
    return [];
  }
  const ins = doc && typeof doc === "object" && doc.inputs && typeof doc.inputs === "object" ? doc.inputs : {};
  return Object.entries(ins).map(([name, d]) => {
    if (typeof d === "string") return { name, type: d };
    const x = d && typeof d === "object" ? d : {};
    return { name, type: x.type || "string", required: x.required === true, default: x.default, description: x.description, enum: x.enum };
  });
}

// upstreamOf is the nodes of graph (draftGraph) whose edges lead to id,
// disabled ones left out (they do not run: nothing to pin).
export function upstreamOf(graph, id) {
  const seen = new Set();
  const todo = [id];
  while (todo.length) {
    const at = todo.pop();
    for (const e of graph.edges) if (e.to === at && !seen.has(e.from)) seen.add(e.from), todo.push(e.from);
  }
  return graph.nodes.filter((n) => seen.has(n.id) && n.id !== id && !n.disabled).map((n) => n.id);
}

// useRun reads a run and reads it again as its events arrive, until it
// ends.
function useRun(id) {
  const [run, setRun] = useState(null);
  useEffect(() => {
    setRun(null);
    if (!id) return undefined;
    let stop = false;
    let es = null;
    let timer = 0;
    const read = () => api("GET", `/api/runs/${encodeURIComponent(id)}`).then((r) => (stop ? null : (setRun(r), r)), () => null);
    const later = () => {
      if (!timer) timer = setTimeout(() => ((timer = 0), read()), 150);
    };
    read().then((r) => {
      if (stop || !r || !LIVE.has(r.status)) return;
      es = new EventSource(`/api/runs/${encodeURIComponent(id)}/events`);
      for (const t of ["node_started", "node_finished", "execution_finished", "execution_parked", "check_verdict"]) es.addEventListener(t, later);
      es.addEventListener("end", () => (es.close(), later()));
    });
    return () => {
      stop = true;
      clearTimeout(timer);
      if (es) es.close();
    };
  }, [id]);
  return run;
}

function ErrorLine({ error }) {
  return (
    <p class="error try-error">
      {error.code ? <code>{error.code}</code> : null}
      {error.node ? ` in node ${error.node}` : ""}: {errorMessage(error)}
    </p>
  );
}

// refusal says why a try was refused (a draft that does not validate:
// the detail lists its problems).
function refusal(x, session) {
  if (x.status === 403) return `Trying a draft needs a token of scope edit; this session's scope is ${session.scope}.`;
  return x.message;
}

// value turns what an input's field holds into the input's type.
function value(input, raw) {
  switch (input.type) {
    case "integer":
    case "number":
      return raw === "" ? undefined : Number(raw);
    case "boolean":
      return !!raw;
    case "list":
    case "map":
    case "any":
      if (typeof raw !== "string") return raw;
      return raw.trim() === "" ? undefined : JSON.parse(raw);
    default:
      return raw === "" ? undefined : raw;
  }
}

function initial(input) {
  if (input.default !== undefined && input.default !== null) return typeof input.default === "object" ? JSON.stringify(input.default) : input.default;
  return input.type === "boolean" ? false : "";
}

function InputField({ input, val, set }) {
  const id = `try-in-${input.name}`;
  const common = { id, name: input.name, "aria-describedby": input.description ? `${id}-d` : undefined, required: input.required };
  let field;
  if (input.enum && input.enum.length) {
    field = (
      <select {...common} value={String(val)} onChange={(e) => set(input.enum.find((x) => String(x) === e.currentTarget.value))}>
        {input.required && val === "" ? <option value="">(choose)</option> : null}
        {input.enum.map((x) => (
          <option value={String(x)}>{String(x)}</option>
        ))}
      </select>
    );
  } else if (input.type === "boolean") {
    field = <input type="checkbox" {...common} required={false} checked={!!val} onChange={(e) => set(e.currentTarget.checked)} />;
  } else if (input.type === "integer" || input.type === "number") {
    field = <input type="number" step={input.type === "integer" ? "1" : "any"} {...common} value={val} onInput={(e) => set(e.currentTarget.value)} />;
  } else if (input.type === "list" || input.type === "map" || input.type === "any") {
    field = <textarea rows="2" {...common} value={val} onInput={(e) => set(e.currentTarget.value)} />;
  } else {
    field = <input type="text" {...common} value={val} onInput={(e) => set(e.currentTarget.value)} />;
  }
  return (
    <div class="field">
      <label for={id}>
        {input.name} <span class="muted">({input.type}{input.required ? ", required" : ""})</span>
      </label>
      {field}
      {input.description ? <small id={`${id}-d`}>{input.description}</small> : null}
    </div>
  );
}

// TryRun runs the whole draft: the inputs form, then the run's status and
// outputs (or error). draft answers the text to run once the edits made
// before the click are applied.
export function TryRun({ name, source, draft, session, onClose }) {
  const inputs = useMemo(() => draftInputs(source), [source]);
  const [vals, setVals] = useState(() => Object.fromEntries(inputs.map((i) => [i.name, initial(i)])));
  const [id, setId] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const run = useRun(id);
  const start = async (e) => {
    e.preventDefault();
    setError("");
    const given = {};
    try {
      for (const i of inputs) {
        const v = value(i, vals[i.name] === undefined ? initial(i) : vals[i.name]);
        if (v !== undefined) given[i.name] = v;
      }
    } catch (x) {
      setError(`An input is not JSON: ${x.message}`);
      return;
    }
    setBusy(true);
    try {
      const r = await api("POST", `/api/workflows/${encodeURIComponent(name)}/try`, { source: await draft(), inputs: given });
      setId(r.execution_id);
    } catch (x) {
      setError(refusal(x, session));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="panel try-run" aria-labelledby="try-h" data-try-run={id}>
      <h2 id="try-h">Run the draft</h2>
      <p class="hint">Runs the text as it is in the editor, saved or not.</p>
      <form class="try-inputs" onSubmit={start}>
        {inputs.length === 0 ? <p class="muted">The draft takes no inputs.</p> : null}
        {inputs.map((i) => (
          <InputField input={i} val={vals[i.name] === undefined ? initial(i) : vals[i.name]} set={(v) => setVals({ ...vals, [i.name]: v })} />
        ))}
        <button type="submit" class="primary try-start" disabled={busy}>
          Run draft
        </button>{" "}
        <button type="button" onClick={onClose}>
          Close
        </button>
      </form>
      {error ? (
        <p role="alert" class="error">
          {error}
        </p>
      ) : null}
      {run ? <RunResult run={run} /> : null}
    </section>
  );
}

// RunResult is a tried run: its status, then its outputs or its error.
function RunResult({ run }) {
  return (
    <div class="try-result" data-status={run.status}>
      <p role="status">
        Run <a href={`#/runs/${run.execution_id}`}>{run.execution_id}</a> <StatusPill status={run.status} />
      </p>
      {run.error ? <ErrorLine error={run.error} /> : null}
      {!run.error && run.outputs && Object.keys(run.outputs).length ? (
        <>
          <h3>Outputs</h3>
          <JsonTree value={run.outputs} label="outputs of the draft's run" runID={run.execution_id} />
        </>
      ) : null}
      {!run.error && LIVE.has(run.status) ? <p class="muted">Running…</p> : null}
    </div>
  );
}

// fits says which of upstream a run lacks a successful step of.
function lacks(doc, upstream) {
  const ok = new Set(doc.steps.filter((s) => s.status === "success").map((s) => s.node));
  return upstream.filter((n) => !ok.has(n));
}

// TryNode runs the selected node alone: a select of the workflow's recent
// runs to pin its upstream nodes from (by default the latest that has a
// successful step of each), then the node's step: its output or error and
// its checks' verdicts.
export function TryNode({ name, node, graph, draft, session }) {
  const upstream = useMemo(() => (graph ? upstreamOf(graph, node) : []), [graph, node]);
  const [runs, setRuns] = useState(null); // [{id, started_at, status, lacks}]
  const [from, setFrom] = useState("");
  const [id, setId] = useState("");
  const [pinnedFrom, setPinnedFrom] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const run = useRun(id);
  useEffect(() => {
    let stop = false;
    setRuns(null);
    api("GET", `/api/runs?${new URLSearchParams({ workflow: name, limit: "10" })}`)
      .then((l) => Promise.all(l.runs.filter((r) => !LIVE.has(r.status) && !r.parent_id).map((r) => api("GET", `/api/runs/${encodeURIComponent(r.execution_id)}`).catch(() => null))))
      .then(
        (docs) => {
          if (stop) return;
          const list = docs.filter(Boolean).map((d) => ({ id: d.execution_id, started_at: d.started_at, status: d.status, lacks: lacks(d, upstream) }));
          setRuns(list);
          const fit = list.find((r) => r.lacks.length === 0);
          setFrom(fit ? fit.id : "");
        },
        (x) => !stop && setError(x.message),
      );
    return () => {
      stop = true;
    };
  }, [name, node, upstream.join(","), id]);
  const start = async () => {
    setError("");
    setBusy(true);
    try {
      const body = { source: await draft(), node };
      if (from) body.from_run = from;
      const r = await api("POST", `/api/workflows/${encodeURIComponent(name)}/try`, body);
      setPinnedFrom(from || "");
      setId(r.execution_id);
    } catch (x) {
      setError(refusal(x, session));
    } finally {
      setBusy(false);
    }
  };
  const steps = run ? run.steps.filter((s) => s.node === node) : [];
  const step = steps[steps.length - 1];
  const verdicts = run && run.verdict ? (run.verdict.nodes || []).filter((v) => v.node === node) : [];
  const selID = `try-from-${node}`;
  return (
    <section class="panel try-node" aria-labelledby="tn-h" data-try-node={node}>
      <h3 id="tn-h">Run this node</h3>
      {upstream.length ? (
        <>
          <p class="hint">
            Runs {node} alone on the outputs of {upstream.join(", ")} from an earlier run; nothing after it runs.
          </p>
          <div class="field">
            <label for={selID}>Upstream outputs from run</label>
            <select id={selID} value={from} onChange={(e) => setFrom(e.currentTarget.value)}>
              {runs && runs.length === 0 ? <option value="">(no run yet)</option> : null}
              {(runs || []).map((r) => (
                <option value={r.id}>
                  {r.id} · {time(r.started_at)} · {r.status}
                  {r.lacks.length ? ` · lacks ${r.lacks.join(", ")}` : ""}
                </option>
              ))}
            </select>
          </div>
        </>
      ) : (
        <p class="hint">Nothing runs before {node}: it runs on the earlier run's inputs.</p>
      )}
      <button type="button" class="try-node-start" disabled={busy || !runs} onClick={start}>
        Run this node
      </button>
      {error ? (
        <p role="alert" class="error">
          {error}
        </p>
      ) : null}
      {run ? (
        <div class="try-result" data-status={run.status} data-step-status={step ? step.status : ""}>
          <p role="status">
            Run <a href={`#/runs/${run.execution_id}`}>{run.execution_id}</a> <StatusPill status={run.status} />
            {pinnedFrom ? <span class="muted"> · pinned from {pinnedFrom}</span> : null}
          </p>
          {step ? (
            <>
              <h4>Output of {node}</h4>
              {step.output == null ? <p class="muted">No output.</p> : <JsonTree value={step.output} label={`output of ${node}`} runID={run.execution_id} />}
              {step.error ? <ErrorLine error={step.error} /> : null}
            </>
          ) : run.error ? (
            <ErrorLine error={run.error} />
          ) : (
            <p class="muted">Running…</p>
          )}
          {verdicts.length ? (
            <>
              <h4>Checks</h4>
              <ul class="checks try-checks">
                {verdicts.flatMap((v) =>
                  (v.checks || []).map((c) => (
                    <li class={`check v-${c.verdict}`} data-verdict={c.verdict}>
                      <StatusPill status={c.verdict} /> {c.check || c.type} {c.reasoning ? <span class="muted">— {c.reasoning}</span> : null}
                    </li>
                  )),
                )}
              </ul>
            </>
          ) : null}
        </div>
      ) : null}
    </section>
  );
}
