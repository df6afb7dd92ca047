// The editor's YAML pane: the workflow's text in a CodeMirror editor,
// with completion and descriptions from the workflow JSON Schema and the
// server's diagnostics marked at their line:col.
//
// The text is the editor page's: typing reports each change (onChange),
// and a text set from outside (an edit from the graph or a form) replaces
// only the part that differs, so the cursor and the scroll stay, and is
// not reported back as typing. Tab is left to the page, to move the focus
// on; indenting is Ctrl-] and Ctrl-[. The host element (#yaml) carries
// the view as its yamlView property, for tests to read the text.
import { useEffect, useLayoutEffect, useRef } from "preact/hooks";
import { autocompletion, completionKeymap } from "@codemirror/autocomplete";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { yaml } from "@codemirror/lang-yaml";
import { bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from "@codemirror/language";
import { lintGutter, lintKeymap, setDiagnostics } from "@codemirror/lint";
import { Annotation, EditorState, StateEffect, StateField } from "@codemirror/state";
import {
  EditorView,
  drawSelection,
  highlightActiveLine,
  highlightActiveLineGutter,
  hoverTooltip,
  keymap,
  lineNumbers,
  showTooltip,
} from "@codemirror/view";
import { api } from "./api.js";
import { complete, describe } from "./schema.js";

let schemaCache = null;

// workflowSchema is the server's workflow JSON Schema, fetched once.
function workflowSchema() {
  if (!schemaCache) schemaCache = api("GET", "/api/schema/workflow").catch((e) => ((schemaCache = null), Promise.reject(e)));
  return schemaCache;
}

// outside marks the transactions that put a text set from outside.
const outside = Annotation.define();

// docView is the element a description shows in.
function docView(d) {
  const dom = document.createElement("div");
  dom.className = "cm-schema-doc";
  const name = document.createElement("code");
  name.textContent = d.name;
  dom.append(name);
  if (d.type) dom.append(` (${d.type})`);
  const p = document.createElement("p");
  p.textContent = d.description;
  dom.append(p);
  return dom;
}

// The description of the key at the cursor, shown by F1 (the keyboard's
// hover) until the cursor moves or Escape.
const showDoc = StateEffect.define();
const docField = StateField.define({
  create: () => null,
  update(v, tr) {
    for (const e of tr.effects) if (e.is(showDoc)) return e.value;
    return tr.docChanged || tr.selection ? null : v;
  },
  provide: (f) => showTooltip.from(f),
});

// theme sizes the pane and shows where the focus is.
const theme = EditorView.theme({
  "&": { border: "1px solid #8c959f", borderRadius: "4px", fontSize: "13px", maxHeight: "70vh", background: "#fff" },
  "&.cm-focused": { outline: "2px solid #0969da", outlineOffset: "1px" },
  ".cm-scroller": { fontFamily: "ui-monospace, monospace", lineHeight: "1.4", overflow: "auto" },
  ".cm-gutters": { background: "#f6f8fa", color: "#57606a", borderRight: "1px solid #d0d7de" },
  ".cm-schema-doc": { maxWidth: "480px", padding: "4px 8px", fontSize: "13px" },
  ".cm-schema-doc p": { margin: "4px 0 0" },
  ".cm-completionInfo": { maxWidth: "420px" },
});

// toMarker is a server diagnostic as a CodeMirror one: from its line:col
// (a column counts characters) to the end of the value there, without a
// trailing comment; null when it has no place in doc.
function toMarker(doc, d) {
  if (!d.line || d.line > doc.lines) return null;
  const line = doc.line(d.line);
  const chars = [...line.text];
  const from = line.from + chars.slice(0, Math.max(0, (d.col || 1) - 1)).join("").length;
  const rest = line.text.slice(from - line.from);
  const value = /^(.*?)(\s+#.*)?\s*$/.exec(rest)[1];
  const severity = d.severity === "error" || d.severity === "warning" ? d.severity : "info";
  return { from, to: from + value.length, severity, source: d.node ? `node ${d.node}` : "skein", message: d.message };
}

// YamlPane shows text; onChange(text) hears each change typed. diagnostics
// are the server's for the text shown (null: keep the marks, moved along
// with the edits since). handle.current gets {goto(line, col)}.
export function YamlPane({ text, file, diagnostics, onChange, handle }) {
  const host = useRef(null);
  const view = useRef(null);
  const changed = useRef(onChange);
  changed.current = onChange;
  const schema = useRef(null);

  useEffect(() => {
    workflowSchema().then(
      (s) => (schema.current = s),
      () => {}, // no schema: the pane edits without completion
    );
    const completions = (ctx) => {
      if (!schema.current) return null;
      const r = complete(schema.current, ctx.state.doc.toString(), ctx.pos);
      if (!r || (r.from === ctx.pos && !ctx.explicit && r.options.length === 0)) return null;
      return { from: r.from, options: r.options, validFor: /^[\w.-]*$/ };
    };
    const hover = hoverTooltip((v, pos) => {
      if (!schema.current) return null;
      const d = describe(schema.current, v.state.doc.toString(), pos);
      return d ? { pos: d.from, end: d.to, above: true, create: () => ({ dom: docView(d) }) } : null;
    });
    const describeAtCursor = (v) => {
      if (!schema.current) return false;
      const pos = v.state.selection.main.head;
      const d = describe(schema.current, v.state.doc.toString(), pos);
      v.dispatch({ effects: showDoc.of(d ? { pos, above: true, create: () => ({ dom: docView(d) }) } : null) });
      return true;
    };
    const v = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: text,
        extensions: [
          lineNumbers(),
          highlightActiveLineGutter(),
          history(),
          drawSelection(),
          indentOnInput(),
          bracketMatching(),
          highlightActiveLine(),
          syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
          yaml(),
          autocompletion({ override: [completions], icons: false }),
          hover,
          docField,
          lintGutter(),
          keymap.of([
            { key: "F1", run: describeAtCursor },
            { key: "Escape", run: (v) => (v.state.field(docField) ? (v.dispatch({ effects: showDoc.of(null) }), true) : false) },
            ...completionKeymap,
            ...defaultKeymap,
            ...historyKeymap,
            ...lintKeymap,
          ]),
          theme,
          EditorView.contentAttributes.of({ "aria-labelledby": "yaml-label", "aria-describedby": "yaml-keys" }),
          EditorView.updateListener.of((u) => {
            if (u.transactions.some((tr) => tr.docChanged && !tr.annotation(outside))) changed.current(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    host.current.yamlView = v;
    if (handle) {
      handle.current = {
        goto(line, col) {
          const m = toMarker(v.state.doc, { line, col });
          if (!m) return;
          v.dispatch({ selection: { anchor: m.from }, scrollIntoView: true });
          v.focus();
        },
      };
    }
    return () => v.destroy();
  }, []);

  // A text set from outside replaces the part that differs. In a layout
  // effect, run as the page renders: a later one could run after more
  // typing, with a text older than the pane's.
  useLayoutEffect(() => {
    const v = view.current;
    if (!v) return;
    const cur = v.state.doc.toString();
    if (cur === text) return;
    let a = 0;
    while (a < cur.length && a < text.length && cur[a] === text[a]) a++;
    let b = 0;
    while (b < cur.length - a && b < text.length - a && cur[cur.length - 1 - b] === text[text.length - 1 - b]) b++;
    v.dispatch({ changes: { from: a, to: cur.length - b, insert: text.slice(a, text.length - b) }, annotations: outside.of(true) });
  }, [text]);

  useLayoutEffect(() => {
    const v = view.current;
    if (!v || !diagnostics) return;
    const marks = diagnostics.map((d) => toMarker(v.state.doc, d)).filter(Boolean);
    v.dispatch(setDiagnostics(v.state, marks));
  }, [diagnostics]);

  return (
    <div class="ed-text">
      <span id="yaml-label" class="label">
        YAML of {file}
      </span>
      <p id="yaml-keys" class="hint">
        Ctrl-Space completes a key or value from the workflow schema; F1 describes the key at the cursor; Ctrl-] and Ctrl-[ indent; F8
        goes to the next problem; Tab moves on to the next control.
      </p>
      <div id="yaml" ref={host} />
    </div>
  );
}
