// The workflow editor: a workflow file's graph beside its YAML text. The
// text is the document: typing in it is validated by the server as you
// type; the palette, the node's Setup form and its buttons send edits
// (POST /api/workflows/edit) that change only the bytes they touch, and
// the pane shows the text they answer. Save writes the text back with
// If-Match, so a file changed on disk since is a conflict, never
// overwritten. The layout is computed; no position is stored.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { parse as parseYAML } from "yaml";
import { api } from "./api.js";
import { Checks } from "./checks.jsx";
import { Completion, templateScope } from "./complete.jsx";
import { useFieldText } from "./fieldtext.js";
import { Graph, grown, layout } from "./graph.jsx";
import { Connections } from "./handles.jsx";
import { LeaveGuard } from "./leave.jsx";
import { Rename } from "./rename.jsx";
import { TryNode, TryRun } from "./try.jsx";
import { YamlPane } from "./yamlpane.jsx";

// VALIDATE_MS is how long typing pauses before the text is validated.
const VALIDATE_MS = 300;

let kindsCache = null;

function kinds() {
  if (!kindsCache) kindsCache = api("GET", "/api/kinds").catch((e) => ((kindsCache = null), Promise.reject(e)));
  return kindsCache;
}

// draftGraph reads the nodes and edges of a workflow's text, or null
// when the text does not parse; an endloop's jump back is an edge too.
export function draftGraph(text) {
  let doc;
  try {
    doc = parseYAML(text);
  } catch {
    return null;
  }
  if (!doc || typeof doc !== "object") return null;
  const nodes = [];
  const byId = {};
  for (const n of Array.isArray(doc.nodes) ? doc.nodes : []) {
    if (!n || typeof n !== "object" || typeof n.id !== "string" || byId[n.id]) continue;
    byId[n.id] = n;
    nodes.push({ id: n.id, type: String(n.type || "?"), disabled: n.disabled === true, raw: n });
  }
  const edges = [];
  for (const e of Array.isArray(doc.edges) ? doc.edges : []) {
    if (e && byId[e.from] && byId[e.to]) edges.push({ from: e.from, to: e.to, on: e.on === undefined || e.on === null ? "" : String(e.on) });
  }
  for (const n of nodes) {
    if (n.type === "endloop" && byId[n.raw.loop]) edges.push({ from: n.id, to: n.raw.loop, on: "", back: true });
  }
  const inputs = doc.inputs && typeof doc.inputs === "object" && !Array.isArray(doc.inputs) ? Object.keys(doc.inputs) : [];
  return { nodes, edges, inputs };
}

// freshID is an id for a new node of kind, not taken in graph.
function freshID(kind, graph) {
  const base = kind.split(".").pop().replace(/[^A-Za-z0-9_]/g, "_") || "node";
  const taken = new Set((graph ? graph.nodes : []).map((n) => n.id));
  for (let i = 1; ; i++) if (!taken.has(`${base}_${i}`)) return `${base}_${i}`;
}

const STRUCTURED = new Set(["strings", "list", "map", "any", "object", "array"]);
// TEMPLATED are the types whose text may hold templates.
const TEMPLATED = new Set(["string", "strings", "list", "map", "any"]);

// shown is a parameter's value as its form field holds it.
function shown(p, v) {
  if (v === undefined || v === null) return "";
  if (STRUCTURED.has(p.type) || typeof v === "object") return JSON.stringify(v);
  return String(v);
}

// SetupField is one parameter of a node's kind: a field of its type whose
// change is applied as a set (or an unset when emptied).
function SetupField({ node, p, value, apply, scope }) {
  const id = `p-${node}-${p.name}`;
  const [text, setText] = useFieldText(shown(p, value), JSON.stringify([node, value]));
  const [error, setError] = useState("");
  const commit = (raw) => {
    setError("");
    let v;
    if (raw === "" || raw === undefined) {
      if (value !== undefined) apply([{ op: "unset", node, path: [p.name] }]);
      return;
    }
    if (p.type === "integer" || p.type === "number") v = Number(raw);
    else if (p.type === "boolean") v = raw;
    else if (STRUCTURED.has(p.type)) {
      try {
        v = parseYAML(raw);
      } catch (x) {
        setError(`Not JSON or YAML: ${x.message}`);
        return;
      }
    } else v = raw;
    if (JSON.stringify(v) === JSON.stringify(value)) return;
    apply([{ op: "set", node, path: [p.name], value: v }]);
  };
  // The field is written when it is changed (left, or Enter), not at each
  // key: a native change listener.
  // Attached as the field is drawn (a layout effect), so a change made
  // right after the panel opens is not missed.
  const ref = useRef(null);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el || el.type === "checkbox" || el.tagName === "SELECT") return undefined;
    const on = () => commit(el.value);
    el.addEventListener("change", on);
    return () => el.removeEventListener("change", on);
  });
  const desc = [p.description, p.default !== undefined && p.default !== null ? `Default: ${JSON.stringify(p.default)}` : ""].filter(Boolean).join(" ");
  const common = { id, name: p.name, "aria-describedby": desc ? `${id}-d` : undefined, "aria-required": p.required ? "true" : undefined };
  let field;
  if (p.enum && p.enum.length) {
    field = (
      <select {...common} value={text} onChange={(e) => commit(e.currentTarget.value)}>
        <option value="">{p.required ? "(choose)" : "(default)"}</option>
        {p.enum.map((x) => (
          <option value={x}>{x}</option>
        ))}
      </select>
    );
  } else if (p.type === "boolean") {
    field = <input type="checkbox" {...common} checked={value === true} onChange={(e) => commit(e.currentTarget.checked)} />;
  } else if (p.type === "integer" || p.type === "number") {
    field = (
      <input type="number" step={p.type === "integer" ? "1" : "any"} {...common} ref={ref} value={text} onInput={(e) => setText(e.currentTarget.value)} />
    );
  } else if (STRUCTURED.has(p.type)) {
    field = <textarea rows="3" {...common} ref={ref} value={text} onInput={(e) => setText(e.currentTarget.value)} />;
  } else {
    field = <input type="text" {...common} ref={ref} value={text} onInput={(e) => setText(e.currentTarget.value)} />;
  }
  return (
    <div class="field" data-param={p.name}>
      <label for={id}>
        {p.name}{" "}
        <span class="muted">
          ({p.type}
          {p.required ? ", required" : ""})
        </span>
      </label>
      {field}
      {TEMPLATED.has(p.type) && !p.expr && !p.plain && !(p.enum && p.enum.length) ? <Completion field={ref} id={id} scope={scope} /> : null}
      {desc ? <small id={`${id}-d`}>{desc}</small> : null}
      {error ? <p role="alert" class="error">{error}</p> : null}
    </div>
  );
}

// NodePanel is the selected node: its Setup form made from its kind's
// parameters, its checks, and Delete, Disable and Duplicate.
function NodePanel({ n, kind, apply, graph, scope, disconnect }) {
  const params = kind ? kind.params : [];
  return (
    <section class="panel node-panel" aria-labelledby="np-h" data-panel-node={n.id}>
      <h2 id="np-h">
        {n.id} <span class="muted">{n.type}</span>
      </h2>
      {kind && kind.description ? <p class="hint">{kind.description}</p> : null}
      <div class="node-actions" role="toolbar" aria-label={`Actions on ${n.id}`}>
        <button type="button" class="danger" onClick={() => apply([{ op: "remove_node", node: n.id }], null)}>
          Delete
        </button>
        <button type="button" onClick={() => apply([{ op: n.disabled ? "enable" : "disable", node: n.id }])}>
          {n.disabled ? "Enable" : "Disable"}
        </button>
        <button type="button" onClick={() => {
          const to = freshID(n.id, graph);
          apply([{ op: "duplicate", node: n.id, to }], to);
        }}>
          Duplicate
        </button>
        <Rename id={n.id} graph={graph} apply={apply} />
      </div>
      <form class="setup" aria-labelledby="setup-h" onSubmit={(e) => e.preventDefault()}>
        <h3 id="setup-h">Setup</h3>
        {!kind ? <p class="muted">No kind {n.type} is registered.</p> : null}
        {kind && params.length === 0 ? <p class="muted">This kind has no parameters.</p> : null}
        {params.map((p) => (
          <SetupField key={`${n.id}/${p.name}`} node={n.id} p={p} value={n.raw[p.name]} apply={apply} scope={scope} />
        ))}
      </form>
      <Connections id={n.id} graph={graph} onRemove={disconnect} />
      <Checks node={n.id} checks={n.raw.checks} expect={n.raw.expect} apply={apply} />
    </section>
  );
}

// Palette is every registered kind, grouped as docs/nodes.md groups them
// and filtered by a search box; a click adds a node of the kind.
function Palette({ list, onAdd, handles, handle, setHandle, after }) {
  const [q, setQ] = useState("");
  const groups = useMemo(() => {
    const out = [];
    const want = q.trim().toLowerCase();
    for (const k of list || []) {
      if (want && !k.kind.toLowerCase().includes(want) && !(k.description || "").toLowerCase().includes(want)) continue;
      let g = out.find((x) => x.name === k.group);
      if (!g) out.push((g = { name: k.group || "Other", kinds: [] }));
      g.kinds.push(k);
    }
    return out;
  }, [list, q]);
  return (
    <section class="palette" aria-labelledby="pal-h">
      <h2 id="pal-h">Add a node</h2>
      <div class="field">
        <label for="pal-q">Search kinds</label>
        <input id="pal-q" type="search" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
      </div>
      <p class="hint">{after ? `A new node follows ${after}.` : "Select a node to connect the new one after it."}</p>
      {after && handles && handles.length > 1 ? (
        <div class="field">
          <label for="pal-handle">From handle of {after}</label>
          <select id="pal-handle" value={handle} onChange={(e) => setHandle(e.currentTarget.value)}>
            {handles.map((h) => (
              <option value={h}>{h || "(default)"}</option>
            ))}
          </select>
        </div>
      ) : null}
      {groups.map((g) => (
        <div class="pal-group" key={g.name}>
          <h3>{g.name}</h3>
          <ul>
            {g.kinds.map((k) => (
              <li key={k.kind}>
                <button type="button" class="kind" data-kind={k.kind} title={k.description || ""} onClick={() => onAdd(k.kind)}>
                  {k.kind}
                </button>
              </li>
            ))}
          </ul>
        </div>
      ))}
      {groups.length === 0 ? <p class="muted">No kind matches.</p> : null}
    </section>
  );
}

export function EditorPage({ name, session }) {
  const [doc, setDoc] = useState(null); // {file, etag}
  const [source, setSource] = useState("");
  const [saved, setSaved] = useState(null); // the text as on disk
  const [check, setCheck] = useState(null); // {text, valid, diagnostics, nodes}
  const [graph, setGraph] = useState(null);
  const [kindList, setKindList] = useState(null);
  const [selected, setSelected] = useState(null);
  const [handle, setHandle] = useState("");
  const [error, setError] = useState("");
  const [note, setNote] = useState("");
  const [conflict, setConflict] = useState(null); // theirs: {etag, source}
  const [busy, setBusy] = useState(false);
  const [trying, setTrying] = useState(false); // the Run form is open
  const seq = useRef(0);
  const timer = useRef(null);
  // text is the pane's text as of the last change, for edits and saves
  // that wait their turn in edits: one edit at a time, each applied to
  // the text the one before it answered.
  const text = useRef("");
  const edits = useRef(Promise.resolve());
  const pane = useRef(null); // the YAML pane's {goto(line, col)}

  const validate = (text, file) => {
    const n = ++seq.current;
    api("POST", `/api/workflows/validate?${new URLSearchParams({ file })}`, text).then(
      (r) => n === seq.current && setCheck({ text, ...r }),
      (x) => {
        if (n !== seq.current) return;
        // Refused (403): the server will say so again at Save.
        setCheck(x.status === 403 ? { text, refused: true, diagnostics: [], nodes: [] } : null);
        setError(x.status === 403 ? `Checking and saving a draft need a token of scope edit; this session's scope is ${session.scope}.` : x.message);
      },
    );
  };

  // show puts text in the pane: the graph redraws from it, and it is
  // validated at once (now) or when typing pauses.
  const show = (src, file, now) => {
    text.current = src;
    setSource(src);
    const g = draftGraph(src);
    if (g) setGraph(g);
    clearTimeout(timer.current);
    if (now) validate(src, file);
    else timer.current = setTimeout(() => validate(src, file), VALIDATE_MS);
  };

  const load = () =>
    api("GET", `/api/workflows/${encodeURIComponent(name)}/source`).then(
      (d) => {
        setDoc({ file: d.file, etag: d.etag });
        setSaved(d.source);
        setConflict(null);
        show(d.source, d.file, true);
      },
      (x) => setError(x.message),
    );

  useEffect(() => {
    load();
    kinds().then(setKindList, (x) => setError(x.message));
    return () => clearTimeout(timer.current);
  }, [name]);

  // The layout follows the graph's shape (its ids and edges): an edit of
  // a value keeps it, and the view's zoom and pan with it. A node added
  // after another is placed beside it, the others staying where they are
  // (grown); any other change of the shape lays the graph out anew.
  const shape = useMemo(() => (graph ? JSON.stringify([graph.nodes.map((n) => n.id), graph.edges.map((e) => [e.from, e.to, e.on, !!e.back])]) : ""), [graph]);
  const laid = useRef(null);
  const lay = useMemo(() => (graph ? (laid.current = grown(laid.current, graph) || layout(graph)) : null), [shape]);
  const kindOf = useMemo(() => Object.fromEntries((kindList ? kindList.kinds : []).map((k) => [k.kind, k])), [kindList]);
  const problems = useMemo(() => new Set(((check && check.diagnostics) || []).filter((d) => d.node && d.severity === "error").map((d) => d.node)), [check]);
  const handlesOf = useMemo(() => Object.fromEntries(((check && check.nodes) || []).map((n) => [n.id, n.handles])), [check]);
  const selHandles = selected ? handlesOf[selected] || [""] : [];
  const scope = useMemo(() => (graph && selected ? templateScope(graph, selected, check && check.nodes, graph.inputs) : null), [graph, selected, check]);
  useEffect(() => setHandle(selHandles[0] || ""), [selected, selHandles.join("\n")]);

  if (!doc) return error ? <p role="alert" class="error">{error}</p> : <p aria-busy="true">Loading {name}…</p>;

  // apply sends edits and shows the text they answer; select is the node
  // to select after (null: none; undefined: keep).
  // pending counts the edits sent and not yet answered: the editor is
  // busy (aria-busy) from the gesture that made one until its answer.
  const [pending, setPending] = useState(0);
  const apply = (ops, select) => {
    setPending((n) => n + 1);
    return (edits.current = edits.current.then(() => applyNow(ops, select)).finally(() => setPending((n) => n - 1)));
  };
  const applyNow = async (ops, select) => {
    setError("");
    setNote("");
    try {
      const r = await api("POST", "/api/workflows/edit", { file: doc.file, source: text.current, ops });
      clearTimeout(timer.current);
      ++seq.current;
      text.current = r.source;
      setSource(r.source);
      const g = draftGraph(r.source);
      if (g) setGraph(g);
      setCheck({ text: r.source, valid: r.valid, diagnostics: r.diagnostics, nodes: r.nodes });
      if (select !== undefined) setSelected(select);
    } catch (x) {
      setError(x.status === 403 ? `Editing needs a token of scope edit; this session's scope is ${session.scope}.` : x.message);
    }
  };

  // draft is the text to run once the edits made before are applied.
  const draft = async () => (await edits.current, text.current);

  const add = (kind) => {
    const id = freshID(kind, graph);
    const ops = [{ op: "add_node", value: { id, type: kind } }];
    if (selected && graph && graph.nodes.some((n) => n.id === selected)) ops.push({ op: "connect", node: selected, to: id, handle: handle || undefined });
    apply(ops, id);
  };

  const connect = (from, h, to) => apply([{ op: "connect", node: from, to, handle: h || undefined }]);
  const disconnect = (e) => apply([{ op: "disconnect", node: e.from, to: e.to, handle: e.on || undefined }]);

  const save = async (etag) => {
    setBusy(true);
    setError("");
    setNote("");
    await edits.current; // the edits made before the click
    const body = text.current;
    try {
      const r = await api("PUT", `/api/workflows/${encodeURIComponent(name)}/source`, body, { "If-Match": etag, "Content-Type": "application/yaml" });
      setDoc({ file: r.file, etag: r.etag });
      setSaved(body);
      setConflict(null);
      setNote(`Saved ${r.file} (version ${r.version}).`);
    } catch (x) {
      if (x.status === 409 && x.problem && x.problem.theirs) setConflict(x.problem.theirs);
      else if (x.status === 422 && x.problem && x.problem.diagnostics) {
        setCheck({ text: body, valid: false, diagnostics: x.problem.diagnostics, nodes: (check && check.nodes) || [] });
        setError("Not saved: the text does not validate; mend the problems listed.");
      } else if (x.status === 403) setError(`Not saved: saving needs a token of scope edit; this session's scope is ${session.scope}.`);
      else setError(`Not saved: ${x.message}`);
    } finally {
      setBusy(false);
    }
  };

  const checked = check && check.text === source;
  const valid = checked && check.valid;
  const refused = checked && check.refused;
  const dirty = source !== saved;
  const sel = graph && selected ? graph.nodes.find((n) => n.id === selected) : null;
  const diags = checked ? check.diagnostics || [] : [];
  return (
    <section class="editor" aria-labelledby="ed-h" aria-busy={pending > 0 ? "true" : undefined} data-etag={doc.etag} data-valid={checked && !refused ? String(!!valid) : ""} data-dirty={String(dirty)}>
      <LeaveGuard dirty={dirty} />
      <h1 id="ed-h">Edit {name}</h1>
      <p class="muted mono">{doc.file}</p>
      <div class="ed-bar" role="toolbar" aria-label="Editor">
        <button type="button" class="primary save" disabled={!(valid || refused) || busy} onClick={() => save(doc.etag)}>
          Save
        </button>
        <button type="button" class="try-open" aria-expanded={trying ? "true" : "false"} onClick={() => setTrying(true)}>
          Run
        </button>
        <span class="ed-state" role="status">
          {!checked ? "Checking…" : refused ? "Not checked" : valid ? (dirty ? "Valid, not saved" : "Valid, saved") : "Invalid: cannot be saved"}
        </span>
        <a href={`#/workflows/${encodeURIComponent(name)}`}>Open {name}</a>
      </div>
      {note ? <p class="note" role="status">{note}</p> : null}
      {error ? (
        <p role="alert" class="error">
          {error}
        </p>
      ) : null}
      {conflict ? (
        <div class="conflict" role="alert">
          <p>{doc.file} changed on disk since you opened it. Reload it (your changes are lost), or overwrite it with your text.</p>
          <button type="button" onClick={() => (setDoc({ ...doc, etag: conflict.etag }), setSaved(conflict.source), setConflict(null), show(conflict.source, doc.file, true))}>
            Reload theirs
          </button>{" "}
          <button type="button" class="danger" onClick={() => save(conflict.etag)}>
            Overwrite
          </button>
        </div>
      ) : null}
      <div class="ed-body">
        <div class="ed-graph">
          {lay ? (
            <Graph graph={graph} lay={lay} editing connect={{ handles: handlesOf, onConnect: connect, onDisconnect: disconnect }} problems={problems} selected={selected} onSelect={(id) => setSelected(id === selected ? null : id)} label={`graph of workflow ${name}`} />
          ) : (
            <p class="muted">The text does not parse; the graph shows when it does.</p>
          )}
          <section class="diagnostics" aria-labelledby="diag-h">
            <h2 id="diag-h">Problems</h2>
            {checked && diags.length === 0 ? <p class="muted">None.</p> : null}
            <ul>
              {diags.map((d) => (
                <li class={`diag ${d.severity}`} data-node={d.node || ""} data-line={d.line}>
                  {d.line ? (
                    <button type="button" class="link mono" aria-label={`${d.line}:${d.col}: go to line ${d.line} in the YAML`} onClick={() => pane.current && pane.current.goto(d.line, d.col)}>
                      {d.line}:{d.col}
                    </button>
                  ) : (
                    <span class="mono">
                      {d.line}:{d.col}
                    </span>
                  )}{" "}
                  {d.severity}: {d.message}
                  {d.node ? (
                    <>
                      {" "}
                      <button type="button" class="link mono" aria-label={`node ${d.node}: select it`} onClick={() => setSelected(d.node)}>
                        node {d.node}
                      </button>
                    </>
                  ) : null}
                </li>
              ))}
            </ul>
          </section>
          <YamlPane text={source} file={doc.file} diagnostics={checked ? diags : null} onChange={(t) => show(t, doc.file, false)} handle={pane} />
        </div>
        <div class="ed-side">
          {trying ? <TryRun name={name} source={source} draft={draft} session={session} onClose={() => setTrying(false)} /> : null}
          {sel ? <NodePanel n={sel} kind={kindOf[sel.type]} apply={apply} graph={graph} scope={scope} disconnect={disconnect} /> : null}
          {sel ? <TryNode key={sel.id} name={name} node={sel.id} graph={graph} draft={draft} session={session} /> : null}
          <Palette list={kindList ? kindList.kinds : []} onAdd={add} handles={selHandles} handle={handle} setHandle={setHandle} after={sel ? sel.id : ""} />
        </div>
      </div>
    </section>
  );
}

// NewWorkflow asks a file name and creates the file with a manual
// trigger, then opens it in the editor.
export function NewWorkflow() {
  const [open, setOpen] = useState(false);
  const [file, setFile] = useState("");
  const [error, setError] = useState("");
  const create = async (e) => {
    e.preventDefault();
    setError("");
    const f = /\.(ya?ml|json)$/i.test(file) ? file : `${file}.yaml`;
    const wfName = f.replace(/\.(ya?ml|json)$/i, "");
    const source = /\.json$/i.test(f)
      ? JSON.stringify({ version: 1, name: wfName, nodes: [{ id: "start", type: "trigger.manual" }] }, null, 2) + "\n"
      : `version: 1\nname: ${wfName}\nnodes:\n  - id: start\n    type: trigger.manual\n`;
    try {
      const r = await api("POST", "/api/workflows", { file: f, source });
      location.hash = `#/workflows/${encodeURIComponent(r.name)}/edit`;
    } catch (x) {
      setError(x.status === 403 ? "Creating a workflow needs a token of scope edit." : x.message);
    }
  };
  if (!open)
    return (
      <button type="button" class="new-wf" onClick={() => setOpen(true)}>
        New workflow
      </button>
    );
  return (
    <form class="new-wf" onSubmit={create} aria-labelledby="new-h">
      <h2 id="new-h">New workflow</h2>
      <div class="field">
        <label for="new-file">File name in the workflows folder</label>
        <input id="new-file" type="text" placeholder="report.yaml" value={file} onInput={(e) => setFile(e.currentTarget.value)} required />
      </div>
      <button type="submit" class="primary">
        Create
      </button>{" "}
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
      {error ? (
        <p role="alert" class="error">
          {error}
        </p>
      ) : null}
    </form>
  );
}
