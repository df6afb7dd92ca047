// A node's checks in the editor: its expected outcome (expect:, judged by
// the model after the run) and its typed checks, each with on_fail. Each
// is added, edited in place and removed by edits of the node's text: an
// edited check sets or unsets only the fields that changed.
import { useEffect, useState } from "preact/hooks";
import { parse as parseYAML } from "yaml";
import { useFieldText } from "./fieldtext.js";

// fieldsOf is a check's fields beside its type and on_fail, as the form
// shows them: YAML flow text, or "" when there are none.
function fieldsOf(c) {
  const rest = {};
  for (const [k, v] of Object.entries(c || {})) if (k !== "type" && k !== "on_fail") rest[k] = v;
  return Object.keys(rest).length ? JSON.stringify(rest) : "";
}

// readFields reads the text of a check's fields: a map, or an error.
function readFields(text) {
  let v;
  try {
    v = parseYAML(text || "{}");
  } catch (x) {
    return { error: `Not JSON or YAML: ${x.message}` };
  }
  if (v === null || v === undefined) return { value: {} };
  if (typeof v !== "object" || Array.isArray(v)) return { error: "The fields are a map: expr: \"len(x) > 0\"" };
  return { value: v };
}

// CheckForm is the fields of one check: its type, its other fields, and
// on_fail. id prefixes its fields' ids.
function CheckForm({ id, check, submit, onSubmit, onCancel }) {
  const [type, setType] = useState((check && check.type) || "expr");
  const [args, setArgs] = useState(fieldsOf(check));
  const [onFail, setOnFail] = useState((check && check.on_fail) || "fail");
  const [error, setError] = useState("");
  const send = (e) => {
    e.preventDefault();
    const r = readFields(args);
    if (r.error) return setError(r.error);
    if (!type.trim()) return setError("A check has a type.");
    setError("");
    onSubmit({ type: type.trim(), ...r.value, on_fail: onFail });
    if (!check) setArgs("");
  };
  return (
    <form class={check ? "edit-check" : "add-check"} onSubmit={send}>
      <div class="field">
        <label for={`${id}-type`}>Check type</label>
        <input id={`${id}-type`} type="text" value={type} onInput={(e) => setType(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for={`${id}-args`}>Its fields (YAML or JSON map)</label>
        <input id={`${id}-args`} type="text" placeholder='expr: "len(x) > 0"' value={args} onInput={(e) => setArgs(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for={`${id}-onfail`}>on_fail</label>
        <select id={`${id}-onfail`} value={onFail} onChange={(e) => setOnFail(e.currentTarget.value)}>
          <option value="fail">fail</option>
          <option value="warn">warn</option>
        </select>
      </div>
      {error ? (
        <p role="alert" class="error">
          {error}
        </p>
      ) : null}
      <button type="submit">{submit}</button>
      {onCancel ? (
        <>
          {" "}
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        </>
      ) : null}
    </form>
  );
}

// checkOps are the edits that turn check i from old into next: a set of
// each field that changed, an unset of each field gone.
function checkOps(node, i, old, next) {
  const ops = [];
  for (const [k, v] of Object.entries(next)) {
    if (JSON.stringify(old[k]) !== JSON.stringify(v)) ops.push({ op: "set", node, path: ["checks", String(i), k], value: v });
  }
  for (const k of Object.keys(old)) if (!(k in next)) ops.push({ op: "unset", node, path: ["checks", String(i), k] });
  return ops;
}

// Expect is the node's expected outcome: shown, added, changed, removed.
function Expect({ node, expect, apply }) {
  const has = typeof expect === "string" && expect !== "";
  const [text, setText] = useFieldText(has ? expect : "", JSON.stringify([node, expect]));
  const id = `expect-${node}`;
  const save = (e) => {
    e.preventDefault();
    const v = text.trim();
    if (!v) {
      if (has) apply([{ op: "unset", node, path: ["expect"] }]);
      return;
    }
    if (v !== expect) apply([{ op: "set", node, path: ["expect"], value: v }]);
  };
  return (
    <form class="expect" onSubmit={save}>
      <div class="field">
        <label for={id}>Expected outcome (expect)</label>
        <textarea id={id} rows="2" aria-describedby={`${id}-d`} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <small id={`${id}-d`}>What the step should have achieved, in words; the model judges it after the run.{has ? "" : " This node has none."}</small>
      </div>
      <button type="submit">{has ? "Save expect" : "Add expect"}</button>
      {has ? (
        <>
          {" "}
          <button type="button" class="danger" onClick={() => apply([{ op: "unset", node, path: ["expect"] }])}>
            Remove expect
          </button>
        </>
      ) : null}
    </form>
  );
}

// Checks is the node's Checks: its expect and its typed checks.
export function Checks({ node, checks, expect, apply }) {
  const [editing, setEditing] = useState(-1);
  useEffect(() => setEditing(-1), [node]);
  const list = Array.isArray(checks) ? checks : [];
  const add = (check) => apply([list.length ? { op: "set", node, path: ["checks", "-"], value: check } : { op: "set", node, path: ["checks"], value: [check] }]);
  return (
    <section class="node-checks" aria-labelledby="checks-h">
      <h3 id="checks-h">Checks</h3>
      <Expect node={node} expect={expect} apply={apply} />
      {list.length === 0 ? <p class="muted">No typed checks.</p> : null}
      <ul>
        {list.map((c, i) => (
          <li data-check={i} key={`${node}/${i}`}>
            {editing === i ? (
              <CheckForm
                id={`check-${i}`}
                check={c}
                submit="Save check"
                onCancel={() => setEditing(-1)}
                onSubmit={(next) => {
                  const ops = checkOps(node, i, c && typeof c === "object" ? c : {}, next);
                  if (ops.length) apply(ops);
                  setEditing(-1);
                }}
              />
            ) : (
              <>
                <span class="mono">{JSON.stringify(c)}</span>{" "}
                <button type="button" class="link" aria-label={`Edit check ${i + 1}`} onClick={() => setEditing(i)}>
                  Edit
                </button>{" "}
                <button type="button" class="link" aria-label={`Remove check ${i + 1}`} onClick={() => apply([{ op: "unset", node, path: list.length === 1 ? ["checks"] : ["checks", String(i)] }])}>
                  Remove
                </button>
              </>
            )}
          </li>
        ))}
      </ul>
      <CheckForm id="check" submit="Add check" onSubmit={add} />
    </section>
  );
}
