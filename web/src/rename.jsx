// Rename gives the selected node a new id (op rename_node, which also
// rewrites the edges, templates and expressions that name it). The new
// id is checked here as the validator checks ids.
import { useEffect, useState } from "preact/hooks";

// MAX_ID is the longest node id (workflow.MaxIDLen).
const MAX_ID = 64;
const ID_RE = /^[a-z_][a-z0-9_]*$/;
// RESERVED are the names expressions read the run by (expr.ScopeRoots)
// and the keywords of an expression that are ids' shape (expr.IsKeyword).
const RESERVED = new Set(["inputs", "trigger", "vars", "secrets", "execution", "loop", "messages"]);
const KEYWORDS = new Set(["true", "false", "nil", "not", "in", "and", "or", "let", "if", "else", "matches", "contains"]);

// idProblem says what is wrong with id as a node's new id, or "".
export function idProblem(id, taken) {
  if (!id) return "Give the new id.";
  if (id.length > MAX_ID) return `An id has at most ${MAX_ID} characters.`;
  if (!ID_RE.test(id)) return "An id is lower-case letters, digits and _, and does not start with a digit.";
  if (RESERVED.has(id)) return `${id} is what expressions read the run by ({{ ${id}.… }}): pick another id.`;
  if (KEYWORDS.has(id)) return `${id} is an expression keyword, so {{ ${id}.x }} could not read it: pick another id such as ${id}_step.`;
  if (taken.has(id)) return `A node ${id} is already there.`;
  return "";
}

export function Rename({ id, graph, apply }) {
  const [open, setOpen] = useState(false);
  const [to, setTo] = useState(id);
  const [error, setError] = useState("");
  useEffect(() => (setOpen(false), setTo(id), setError("")), [id]);
  if (!open)
    return (
      <button type="button" class="rename" onClick={() => setOpen(true)}>
        Rename
      </button>
    );
  const submit = (e) => {
    e.preventDefault();
    const v = to.trim();
    if (v === id) return setOpen(false);
    const p = idProblem(v, new Set(graph.nodes.map((n) => n.id)));
    setError(p);
    if (!p) apply([{ op: "rename_node", node: id, to: v }], v);
  };
  return (
    <form class="rename" onSubmit={submit} onKeyDown={(e) => e.key === "Escape" && setOpen(false)}>
      <label for="rename-to">New id of {id}</label>{" "}
      <input
        id="rename-to"
        type="text"
        maxlength={MAX_ID}
        autocomplete="off"
        spellcheck={false}
        value={to}
        aria-invalid={error ? "true" : undefined}
        aria-describedby={error ? "rename-err" : undefined}
        ref={(el) => el && !el.dataset.focused && ((el.dataset.focused = "1"), el.focus(), el.select())}
        onInput={(e) => setTo(e.currentTarget.value)}
      />{" "}
      <button type="submit" class="primary">
        Rename
      </button>{" "}
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
      {error ? (
        <p role="alert" class="error" id="rename-err">
          {error}
        </p>
      ) : null}
    </form>
  );
}
