// What the workflow JSON Schema (GET /api/schema/workflow) says about a
// place in a workflow's YAML text: the keys a map there may take, the
// values a key may have, and their descriptions. The YAML pane completes
// and describes from it.
//
// The maintained codemirror-json-schema package was evaluated first and
// not taken: its YAML mode offered the top-level keys of this schema but
// nothing inside a node (the node's parameters are chosen by its type
// through allOf of if/then under $ref'd array items), and it brings shiki
// and markdown-it along, which tripled the bundle (+765 KB minified). This
// resolver reads the text with the yaml package (already the graph's
// parser) and follows only what the generated schema uses: $ref, allOf,
// anyOf/oneOf, if/then/else on const and required, properties, items.
import { isMap, isScalar, isSeq, parseDocument } from "yaml";

// deref follows a schema's local $refs; the referring schema's own
// keywords (a description, a default) win over the target's.
function deref(root, s) {
  for (let i = 0; s && typeof s === "object" && typeof s.$ref === "string" && i < 32; i++) {
    let t = root;
    for (const p of s.$ref.replace(/^#\/?/, "").split("/").filter(Boolean)) {
      t = t && t[p.replace(/~1/g, "/").replace(/~0/g, "~")];
    }
    const { $ref, ...own } = s;
    s = { ...(t || {}), ...own };
  }
  return s && typeof s === "object" ? s : {};
}

// holds reports whether data satisfies an if schema, as far as the
// generated schema's conditions go: required keys and const or enum
// properties.
function holds(root, cond, data) {
  cond = deref(root, cond);
  if (!data || typeof data !== "object" || Array.isArray(data)) return false;
  for (const k of cond.required || []) if (!(k in data)) return false;
  for (const [k, p] of Object.entries(cond.properties || {})) {
    if (!(k in data)) continue;
    const q = deref(root, p);
    if ("const" in q && data[k] !== q.const) return false;
    if (Array.isArray(q.enum) && !q.enum.includes(data[k])) return false;
  }
  return true;
}

// branches are the schemas that apply to data at a place described by s:
// s itself, its allOf, anyOf and oneOf members, and the then (or else) of
// each if, chosen by the data.
function branches(root, s, data, out = []) {
  s = deref(root, s);
  out.push(s);
  for (const b of [...(s.allOf || []), ...(s.anyOf || []), ...(s.oneOf || [])]) branches(root, b, data, out);
  if (s.if) {
    if (holds(root, s.if, data)) {
      if (s.then) branches(root, s.then, data, out);
    } else if (s.else) branches(root, s.else, data, out);
  }
  return out;
}

// properties are the keys a map described by s takes, given its data,
// each with its schema (dereferenced; the first description found).
export function properties(root, s, data) {
  const out = new Map();
  for (const b of branches(root, s, data)) {
    for (const [k, p] of Object.entries(b.properties || {})) {
      const d = deref(root, p);
      const had = out.get(k);
      if (!had) out.set(k, d);
      else if (!had.description && d.description) out.set(k, { ...had, description: d.description });
    }
  }
  return out;
}

// child is the schema of one step down from s: a key of a map, an index
// of a list.
function child(root, s, data, step) {
  const bs = branches(root, s, data);
  if (typeof step === "number") {
    const items = bs.map((b) => b.items).find((x) => x && typeof x === "object");
    return items ? deref(root, items) : {};
  }
  const p = properties(root, s, data).get(step);
  if (p) return p;
  const more = bs.map((b) => b.additionalProperties).find((x) => x && typeof x === "object");
  return more ? deref(root, more) : {};
}

// at is the schema and the data at a path of keys and indexes.
function at(root, path, data) {
  let s = root;
  let d = data;
  for (const step of path) {
    s = child(root, s, d, step);
    d = d !== null && typeof d === "object" ? d[step] : undefined;
  }
  return { schema: s, data: d };
}

// values are the values a key's schema allows, listed: its enums and
// consts, true and false for a boolean; each described by the then of the
// if in the map's schema that the value selects (a node's type: its
// kind's description), else by nothing.
function values(root, mapSchema, key, s) {
  const seen = new Set();
  const out = [];
  const add = (v) => {
    if (seen.has(v)) return;
    seen.add(v);
    out.push({ value: v, description: selectedBy(root, mapSchema, key, v) });
  };
  for (const b of branches(root, s, undefined)) {
    for (const v of b.enum || []) add(v);
    if ("const" in b) add(b.const);
    if (b.type === "boolean") [true, false].forEach(add);
  }
  return out;
}

// selectedBy is the description of the branch a value of key selects in
// a map's schema, if any.
function selectedBy(root, mapSchema, key, v) {
  for (const b of branches(root, mapSchema, undefined)) {
    for (const a of b.allOf || []) {
      if (!a.if || !a.then) continue;
      const p = (deref(root, a.if).properties || {})[key];
      if (p && deref(root, p).const === v) return deref(root, a.then).description || "";
    }
  }
  return "";
}

// typeText is a short name of what a schema takes, for a completion's
// detail.
function typeText(root, s) {
  const types = new Set();
  for (const b of branches(root, s, undefined)) {
    if (Array.isArray(b.enum)) types.add("enum");
    else if (typeof b.type === "string") types.add(b.type);
  }
  types.delete(undefined);
  if (types.size > 1) types.delete("string"); // a template stands in for any type
  return [...types].join(" | ");
}

const KEY = "__skein_key__";
const VALUE = "__skein_value__";

// find walks a parsed document's nodes for the placeholder: the path of
// the map holding it and, for a value, its key.
function find(node, path) {
  if (isMap(node)) {
    for (const pair of node.items) {
      const k = isScalar(pair.key) ? pair.key.value : undefined;
      if (k === KEY) return { path, key: null };
      if (isScalar(pair.value) && pair.value.value === VALUE) return { path, key: String(k) };
      const r = find(pair.value, [...path, k]);
      if (r) return r;
    }
  } else if (isSeq(node)) {
    for (let i = 0; i < node.items.length; i++) {
      const r = find(node.items[i], [...path, i]);
      if (r) return r;
    }
  }
  return null;
}

function toJS(doc) {
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch {
    return undefined;
  }
}

// complete answers what may be written at pos in text, from the schema
// root: {from, options: [{label, detail, info, apply}]} for a key being
// written (at the start of a line or after "- ") or a value after "key: ",
// or null where neither is being written.
export function complete(root, text, pos) {
  const lineStart = text.lastIndexOf("\n", pos - 1) + 1;
  let lineEnd = text.indexOf("\n", pos);
  if (lineEnd < 0) lineEnd = text.length;
  const before = text.slice(lineStart, pos);
  const after = text.slice(pos, lineEnd);
  let m = /^(\s*(?:-\s+)*)([A-Za-z_][\w.-]*)?$/.exec(before);
  if (m && !after.trim()) {
    const word = m[2] || "";
    const from = pos - word.length;
    const doc = parseDocument(text.slice(0, from) + `${KEY}: 0` + text.slice(lineEnd));
    const place = find(doc.contents, []);
    if (!place || place.key !== null) return null;
    const { schema, data } = at(root, place.path, toJS(doc));
    const options = [];
    for (const [k, p] of properties(root, schema, data)) {
      if (data && typeof data === "object" && k in data) continue;
      options.push({ label: k, type: "property", detail: typeText(root, p), info: p.description || "", apply: `${k}: ` });
    }
    // Keys required without a schema of their own there (a node's id,
    // before its type says which kind's fields it has).
    for (const b of branches(root, schema, data)) {
      for (const k of b.required || []) {
        if (options.some((o) => o.label === k) || (data && typeof data === "object" && k in data)) continue;
        options.push({ label: k, type: "property", detail: "required", info: "", apply: `${k}: ` });
      }
    }
    return { from, options };
  }
  m = /^(\s*(?:-\s+)*)([A-Za-z_][\w.-]*):\s+([\w.-]*)$/.exec(before);
  if (m && !after.trim()) {
    const word = m[3];
    const from = pos - word.length;
    const doc = parseDocument(text.slice(0, from) + VALUE + text.slice(lineEnd));
    const place = find(doc.contents, []);
    if (!place || place.key === null) return null;
    const { schema, data } = at(root, place.path, toJS(doc));
    const s = child(root, schema, data, place.key);
    const options = values(root, schema, place.key, s).map((v) => ({
      label: String(v.value),
      type: "enum",
      info: v.description,
    }));
    return { from, options };
  }
  return null;
}

// hit is the key or scalar value at pos in a parsed document's nodes.
function hit(node, pos, path) {
  if (isMap(node)) {
    for (const pair of node.items) {
      const k = isScalar(pair.key) ? pair.key.value : undefined;
      if (isScalar(pair.key) && pair.key.range && pair.key.range[0] <= pos && pos <= pair.key.range[1]) {
        return { path, key: String(k), range: pair.key.range };
      }
      if (isScalar(pair.value) && pair.value.range && pair.value.range[0] <= pos && pos <= pair.value.range[1]) {
        return { path, key: String(k), value: pair.value.value, range: pair.value.range };
      }
      if (pair.value && pair.value.range && pair.value.range[0] <= pos && pos <= pair.value.range[2]) {
        const r = hit(pair.value, pos, [...path, k]);
        if (r) return r;
      }
    }
  } else if (isSeq(node)) {
    for (let i = 0; i < node.items.length; i++) {
      const it = node.items[i];
      if (it && it.range && it.range[0] <= pos && pos <= it.range[2]) {
        const r = hit(it, pos, [...path, i]);
        if (r) return r;
      }
    }
  }
  return null;
}

// describe answers what the schema says of the key (or of the value
// that selects a branch, such as a node's type) at pos in text:
// {from, to, name, description}, or null.
export function describe(root, text, pos) {
  const doc = parseDocument(text);
  const h = hit(doc.contents, pos, []);
  if (!h) return null;
  const { schema, data } = at(root, h.path, toJS(doc));
  if (h.value !== undefined) {
    const d = selectedBy(root, schema, h.key, h.value);
    if (d) return { from: h.range[0], to: h.range[1], name: `${h.key}: ${h.value}`, description: d };
  }
  const p = properties(root, schema, data).get(h.key);
  return p && p.description ? { from: h.range[0], to: h.range[1], name: h.key, description: p.description, type: typeText(root, p) } : null;
}
