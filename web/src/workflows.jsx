// The served workflows: a list, and one workflow's graph with a form made
// from its inputs that starts a run and opens it.
import { useEffect, useMemo, useState } from "preact/hooks";
import { api } from "./api.js";
import { NewWorkflow } from "./editor.jsx";
import { time } from "./format.js";
import { Graph, layout } from "./graph.jsx";
import { may } from "./run.jsx";
import { StatusPill } from "./runs.jsx";

// lastRuns reads each workflow's newest run: name → run, or null.
async function lastRuns(names) {
  const runs = await Promise.all(
    names.map((n) =>
      api("GET", `/api/runs?${new URLSearchParams({ workflow: n, limit: "1" })}`).then(
        (d) => d.runs[0] || null,
        () => null,
      ),
    ),
  );
  return Object.fromEntries(names.map((n, i) => [n, runs[i]]));
}

// nextFires is, per workflow, the earliest next fire of its schedules.
async function nextFires() {
  const out = {};
  const d = await api("GET", "/api/schedules");
  for (const s of d.schedules) {
    if (s.next_fire && (!out[s.workflow] || new Date(s.next_fire) < new Date(out[s.workflow]))) out[s.workflow] = s.next_fire;
  }
  return out;
}

// baseName is a file's name without its folder; fileName the name a file
// of the folder is edited by: its base name without the extension.
const baseName = (file) => file.split(/[\\/]/).pop();
const fileName = (file) => baseName(file).replace(/\.[^.]*$/, "");

export function WorkflowsPage({ session }) {
  const [list, setList] = useState(null);
  const [error, setError] = useState("");
  const [last, setLast] = useState({});
  const [next, setNext] = useState({});
  useEffect(() => {
    let stop = false;
    api("GET", "/api/workflows").then(
      (l) => {
        if (stop) return;
        setList(l);
        lastRuns(l.workflows.map((w) => w.name)).then((r) => !stop && setLast(r));
        nextFires().then((n) => !stop && setNext(n), () => {});
      },
      (e) => setError(e.message),
    );
    return () => {
      stop = true;
    };
  }, []);
  return (
    <section aria-labelledby="wf-h">
      <h1 id="wf-h">Workflows</h1>
      {session && may(session, "edit") ? <NewWorkflow /> : null}
      {error ? <p role="alert" class="error">{error}</p> : null}
      {list && list.workflows.length === 0 ? <p>No workflows are served.</p> : null}
      {list && list.workflows.length ? (
        <table class="workflows">
          <caption class="sr-only">Served workflows</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Description</th>
              <th scope="col">Triggers</th>
              <th scope="col">Inputs</th>
              <th scope="col">Last run</th>
              <th scope="col">Next fire</th>
            </tr>
          </thead>
          <tbody>
            {list.workflows.map((w) => (
              <tr key={w.name} data-workflow={w.name}>
                <td>
                  <a href={`#/workflows/${encodeURIComponent(w.name)}`}>{w.name}</a>{" "}
                  <a class="edit-link" href={`#/workflows/${encodeURIComponent(w.name)}/edit`} aria-label={`Edit ${w.name}`}>
                    Edit
                  </a>
                </td>
                <td>{w.description || ""}</td>
                <td>{w.triggers.map((t) => t.type).join(", ")}</td>
                <td>{w.inputs.map((i) => i.name).join(", ")}</td>
                <td class="last-run">
                  {last[w.name] ? (
                    <>
                      <StatusPill status={last[w.name].status} />{" "}
                      <a href={`#/runs/${last[w.name].execution_id}`}>{time(last[w.name].started_at)}</a>
                    </>
                  ) : last[w.name] === null ? (
                    <span class="muted">never</span>
                  ) : null}
                </td>
                <td class="next-fire" data-next={next[w.name] || ""}>
                  {next[w.name] ? time(next[w.name]) : ""}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {list && list.problems.length ? (
        <>
          <h2>Problems</h2>
          <p class="hint">Files of the folder that are not served, and webhooks that take no requests until the server is configured for them.</p>
          <ul class="problems">
            {list.problems.map((p) => (
              <li>
                <span class="mono">{p.file}</span>
                {p.node ? <span class="mono"> › {p.node}</span> : null}: {p.message}
                {!p.node ? (
                  <>
                    {" "}
                    <a class="edit-link" href={`#/workflows/${encodeURIComponent(fileName(p.file))}/edit`} aria-label={`Edit ${baseName(p.file)}`}>
                      Edit
                    </a>
                  </>
                ) : null}
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}

function initial(input) {
  if (input.default !== undefined && input.default !== null) return input.default;
  if (input.type === "boolean") return false;
  return "";
}

// value turns what a field holds into the input's type.
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
      if (raw.trim() === "") return undefined;
      return JSON.parse(raw);
    default:
      return raw === "" ? undefined : raw;
  }
}

function Field({ input, val, set }) {
  const id = `in-${input.name}`;
  const desc = input.description ? <small id={`${id}-d`}>{input.description}</small> : null;
  const common = { id, name: input.name, "aria-describedby": input.description ? `${id}-d` : undefined, required: input.required };
  let field;
  if (input.enum && input.enum.length) {
    field = (
      <select {...common} value={String(val)} onChange={(e) => set(input.enum.find((x) => String(x) === e.currentTarget.value))}>
        {input.enum.map((x) => (
          <option value={String(x)}>{String(x)}</option>
        ))}
      </select>
    );
  } else if (input.type === "boolean") {
    field = <input type="checkbox" {...common} required={false} checked={!!val} onChange={(e) => set(e.currentTarget.checked)} />;
  } else if (input.type === "integer" || input.type === "number") {
    field = (
      <input type="number" step={input.type === "integer" ? "1" : "any"} {...common} value={val} onInput={(e) => set(e.currentTarget.value)} />
    );
  } else if (input.type === "list" || input.type === "map" || input.type === "any") {
    // A list or a map is written as JSON (the API's input types).
    field = (
      <textarea rows="3" {...common} value={typeof val === "string" ? val : JSON.stringify(val)} onInput={(e) => set(e.currentTarget.value)} />
    );
  } else {
    field = <input type="text" {...common} value={val} onInput={(e) => set(e.currentTarget.value)} />;
  }
  return (
    <div class="field">
      <label for={id}>
        {input.name} <span class="muted">({input.type}{input.required ? ", required" : ""})</span>
      </label>
      {field}
      {desc}
    </div>
  );
}

export function WorkflowPage({ name, session }) {
  const [wf, setWf] = useState(null);
  const [error, setError] = useState("");
  const [vals, setVals] = useState({});
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    api("GET", `/api/workflows/${encodeURIComponent(name)}`).then(
      (w) => {
        setWf(w);
        setVals(Object.fromEntries(w.inputs.map((i) => [i.name, initial(i)])));
      },
      (e) => setError(e.message),
    );
  }, [name]);
  const lay = useMemo(() => (wf && wf.graph ? layout(wf.graph) : null), [wf]);
  if (error && !wf) return <p role="alert" class="error">{error}</p>;
  if (!wf) return <p aria-busy="true">Loading {name}…</p>;

  const start = async (e) => {
    e.preventDefault();
    setError("");
    const inputs = {};
    try {
      for (const i of wf.inputs) {
        const v = value(i, vals[i.name]);
        if (v !== undefined) inputs[i.name] = v;
      }
    } catch (x) {
      setError(`An input is not JSON: ${x.message}`);
      return;
    }
    setBusy(true);
    try {
      const run = await api("POST", `/api/workflows/${encodeURIComponent(name)}/runs`, { inputs });
      location.hash = `#/runs/${run.execution_id}`;
    } catch (x) {
      setError(x.message);
      setBusy(false);
    }
  };
  const chat = wf.triggers.some((t) => t.type === "trigger.chat");
  return (
    <section aria-labelledby="wf1-h">
      <h1 id="wf1-h">{wf.name}</h1>
      {wf.description ? <p>{wf.description}</p> : null}
      <p class="muted mono">
        {wf.file} <a href={`#/workflows/${encodeURIComponent(wf.name)}/edit`}>Edit</a>
      </p>
      {chat ? (
        <p>
          <a href={`#/chat/${encodeURIComponent(wf.name)}`}>Chat with {wf.name}</a>
        </p>
      ) : null}
      {lay ? <Graph graph={wf.graph} lay={lay} label={`graph of workflow ${wf.name}`} /> : null}
      {may(session, "run") ? (
        <form class="start" onSubmit={start} aria-labelledby="start-h">
          <h2 id="start-h">Start a run</h2>
          {wf.inputs.length === 0 ? <p class="muted">This workflow takes no inputs.</p> : null}
          {wf.inputs.map((i) => (
            <Field input={i} val={vals[i.name]} set={(v) => setVals({ ...vals, [i.name]: v })} />
          ))}
          <button type="submit" class="primary" disabled={busy}>
            Start run
          </button>
          {error ? <p role="alert" class="error">{error}</p> : null}
        </form>
      ) : null}
    </section>
  );
}
