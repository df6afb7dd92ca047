// Completion of templates in the Setup form. In a field that takes
// templates, typing `{{` offers what the template may name: the nodes
// upstream of this one, `trigger` and the workflow's declared inputs
// (`inputs.<name>`); after `<node>.` the output ports its kind declares
// (from the draft's validation, which knows the ports a node's parameters
// add), and after `inputs.` the inputs. The list is a listbox the field
// controls (aria-activedescendant): arrows move, Enter takes, Escape
// closes.
import { useLayoutEffect, useRef, useState } from "preact/hooks";

// templateScope is what a template of node id may name: ids (upstream of
// it, in the graph's order), inputs (names), outputs (node id → its
// declared ports, or null when any may be read), types (node id → kind).
export function templateScope(graph, id, nodes, inputs) {
  const into = {};
  for (const e of graph.edges) (into[e.to] = into[e.to] || []).push(e.from);
  const up = new Set();
  const todo = [id];
  while (todo.length) {
    for (const f of into[todo.pop()] || []) {
      if (f === id || up.has(f)) continue;
      up.add(f);
      todo.push(f);
    }
  }
  const outputs = {};
  for (const n of nodes || []) outputs[n.id] = n.outputs || null;
  return {
    ids: graph.nodes.filter((n) => up.has(n.id)).map((n) => n.id),
    types: Object.fromEntries(graph.nodes.map((n) => [n.id, n.type])),
    inputs: inputs || [],
    outputs,
  };
}

// at is the completion the caret is in: inside `{{ … }}`, the word being
// typed (word, from start) and the name before its dot (base), if any;
// null when the caret is not in a template or after a deeper path.
export function at(text, caret) {
  const before = text.slice(0, caret);
  const open = before.lastIndexOf("{{");
  if (open < 0 || before.indexOf("}}", open) >= 0) return null;
  const inner = before.slice(open + 2);
  const m = /(?:^|[^A-Za-z0-9_.])(?:([A-Za-z_][A-Za-z0-9_]*)\.)?([A-Za-z0-9_]*)$/.exec(inner);
  if (!m) return null;
  return { base: m[1] || "", word: m[2], start: caret - m[2].length };
}

// options are the choices at a completion point: {label, insert, detail,
// more} (more: a dot follows, and the ports of the node).
export function options(scope, c) {
  const want = (s) => s.startsWith(c.word) && s !== c.word;
  if (!c.base) {
    const out = [];
    for (const id of scope.ids) {
      const ports = scope.outputs[id];
      const more = Array.isArray(ports) && ports.length > 0;
      out.push({ label: id, insert: more ? `${id}.` : id, detail: scope.types[id] || "node", more });
    }
    out.push({ label: "trigger", insert: "trigger", detail: "the run's payload" });
    for (const name of scope.inputs) out.push({ label: `inputs.${name}`, insert: `inputs.${name}`, detail: "input" });
    return out.filter((o) => o.label.startsWith(c.word) && o.label !== c.word);
  }
  if (c.base === "inputs") return scope.inputs.filter(want).map((name) => ({ label: name, insert: name, detail: "input" }));
  if (!scope.ids.includes(c.base)) return [];
  const ports = scope.outputs[c.base];
  return (Array.isArray(ports) ? ports : []).filter(want).map((p) => ({ label: p, insert: p, detail: `output of ${c.base}` }));
}

// Completion attaches to the text field (an input or a textarea) in
// field, whose id is id, and lists the options at its caret.
export function Completion({ field, id, scope }) {
  const [list, setList] = useState(null); // {c, items}
  const [active, setActive] = useState(0);
  const cur = useRef({ list: null, active: 0, scope, wrote: false });
  cur.current.scope = scope;
  const listID = `${id}-complete`;

  useLayoutEffect(() => {
    const el = field.current;
    if (!el) return undefined;
    const combo = el.tagName === "INPUT";
    const show = (l, a) => {
      cur.current.list = l;
      cur.current.active = a;
      setList(l);
      setActive(a);
      if (combo) el.setAttribute("aria-expanded", l ? "true" : "false");
      if (l) el.setAttribute("aria-activedescendant", `${listID}-${a}`);
      else el.removeAttribute("aria-activedescendant");
    };
    const refresh = () => {
      const c = at(el.value, el.selectionStart);
      const items = c && cur.current.scope ? options(cur.current.scope, c) : [];
      show(items.length ? { c, items } : null, 0);
    };
    const take = (o) => {
      const { c } = cur.current.list;
      const caret = el.selectionStart;
      el.value = el.value.slice(0, c.start) + o.insert + el.value.slice(caret);
      const to = c.start + o.insert.length;
      el.setSelectionRange(to, to);
      cur.current.wrote = true;
      el.dispatchEvent(new Event("input", { bubbles: true }));
    };
    cur.current.take = (i) => {
      const l = cur.current.list;
      if (l && l.items[i]) take(l.items[i]);
      el.focus();
    };
    const key = (ev) => {
      const l = cur.current.list;
      if (!l) return;
      const n = l.items.length;
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        ev.preventDefault();
        show(l, (cur.current.active + (ev.key === "ArrowDown" ? 1 : n - 1)) % n);
      } else if (ev.key === "Enter") {
        ev.preventDefault();
        ev.stopPropagation();
        cur.current.swallow = true;
        take(l.items[cur.current.active]);
      } else if (ev.key === "Escape") {
        ev.preventDefault();
        ev.stopPropagation();
        show(null, 0);
      }
    };
    // A value written here is not the user's typing, after which the
    // browser fires change when the field is left: fire it.
    const blur = () => {
      show(null, 0);
      if (cur.current.wrote) {
        cur.current.wrote = false;
        el.dispatchEvent(new Event("change", { bubbles: true }));
      }
    };
    const changed = () => (cur.current.wrote = false);
    // The Enter that took an option is not the form's: its keypress
    // (which would write the field) is dropped too.
    const press = (ev) => {
      if (ev.key === "Enter" && cur.current.swallow) {
        ev.preventDefault();
        ev.stopPropagation();
      }
      cur.current.swallow = false;
    };
    if (combo) {
      el.setAttribute("role", "combobox");
      el.setAttribute("aria-expanded", "false");
    }
    el.setAttribute("aria-autocomplete", "list");
    el.setAttribute("aria-controls", listID);
    el.addEventListener("input", refresh);
    el.addEventListener("click", refresh);
    el.addEventListener("keydown", key);
    el.addEventListener("keypress", press);
    el.addEventListener("blur", blur);
    el.addEventListener("change", changed);
    return () => {
      el.removeEventListener("input", refresh);
      el.removeEventListener("click", refresh);
      el.removeEventListener("keydown", key);
      el.removeEventListener("keypress", press);
      el.removeEventListener("blur", blur);
      el.removeEventListener("change", changed);
    };
  }, [field.current, listID]);

  return (
    <ul class="complete" id={listID} role="listbox" aria-label={`Names a template of ${id.replace(/^p-/, "").replace("-", " ")} may use`} hidden={!list}>
      {list
        ? list.items.map((o, i) => (
            <li
              id={`${listID}-${i}`}
              role="option"
              aria-selected={i === active ? "true" : "false"}
              class={i === active ? "active" : ""}
              data-option={o.label}
              onMouseDown={(e) => e.preventDefault()}
              onClick={() => cur.current.take(i)}
            >
              <span class="mono">{o.label}</span> <span class="muted">{o.detail}</span>
            </li>
          ))
        : null}
    </ul>
  );
}
