// A workflow's graph, laid out left to right by dagre, drawn as SVG.
// Each node is a badge (status, visits, duration, tokens, cost) that the
// keyboard reaches and selects; back edges (loops) are dashed; an edge's
// handle is its label; the branch a control node took is marked.
import { graphlib, layout as dagreLayout } from "@dagrejs/dagre";
import { Fragment } from "preact";
import { memo } from "./memo.js";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { cost, duration, tokens } from "./format.js";
import { ConnectPicker, EdgeBar, NodeHandles, Wire, edgeStart, useWire } from "./handles.jsx";

const NODE_W = 176;
const NODE_H = 62;

// The pane a graph is drawn in is at most MAX_H pixels high; zoom goes
// from MIN_ZOOM to MAX_ZOOM, ZOOM_STEP a button press.
const MAX_H = 620;
const MIN_ZOOM = 0.1;
const MAX_ZOOM = 4;
const ZOOM_STEP = 1.25;

// The space between nodes of a rank, between ranks, and around the graph.
const NODESEP = 22;
const RANKSEP = 60;
const MARGIN = 12;

// layout places the graph's nodes and routes its edges.
export function layout(graph) {
  const g = new graphlib.Graph({ multigraph: true });
  // dagre's default ranker (network simplex) takes ~0.5 s on 500 nodes;
  // tight-tree ranks a large graph in a third of that, nearly as well.
  const ranker = graph.nodes.length > 150 ? "tight-tree" : "network-simplex";
  g.setGraph({ rankdir: "LR", nodesep: NODESEP, ranksep: RANKSEP, edgesep: 14, marginx: MARGIN, marginy: MARGIN, ranker });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of graph.nodes) g.setNode(n.id, { width: NODE_W, height: NODE_H });
  graph.edges.forEach((e, i) => {
    const label = e.on || "";
    g.setEdge(e.from, e.to, { width: label ? label.length * 7 + 10 : 0, height: label ? 16 : 0, labelpos: "c" }, `e${i}`);
  });
  dagreLayout(g);
  const nodes = {};
  for (const n of graph.nodes) {
    const p = g.node(n.id);
    nodes[n.id] = { x: p.x - NODE_W / 2, y: p.y - NODE_H / 2 };
  }
  const edges = graph.edges.map((e, i) => {
    const p = g.edge({ v: e.from, w: e.to, name: `e${i}` });
    return { ...e, points: p.points, lx: p.x, ly: p.y };
  });
  const { width, height } = g.graph();
  return { nodes, edges, width: Math.max(width, 100), height: Math.max(height, 60) };
}

// grown is the layout of graph when graph is the graph prev laid out with
// one node added and one edge to it from a node prev has (the editor's
// palette adds a node so): the other nodes and edges stay where they are,
// and the new node goes right of the one it follows, at its height or
// below the nodes already there. Any other change answers null: the graph
// is laid out anew. A large graph's layout takes dagre ~100 ms; this, none.
export function grown(prev, graph) {
  if (!prev || graph.nodes.length !== Object.keys(prev.nodes).length + 1 || graph.edges.length !== prev.edges.length + 1) return null;
  const added = graph.nodes.filter((n) => !prev.nodes[n.id]);
  if (added.length !== 1) return null;
  const id = added[0].id;
  const same = (a, b) => a.from === b.from && a.to === b.to && (a.on || "") === (b.on || "") && !!a.back === !!b.back;
  let j = 0;
  let fresh = null;
  for (const e of graph.edges) {
    if (j < prev.edges.length && same(prev.edges[j], e)) {
      j++;
      continue;
    }
    if (fresh || e.to !== id || !prev.nodes[e.from] || e.back) return null;
    fresh = e;
  }
  if (!fresh || j !== prev.edges.length) return null;
  const from = prev.nodes[fresh.from];
  const x = from.x + NODE_W + RANKSEP;
  let y = from.y;
  const column = Object.values(prev.nodes)
    .filter((p) => p.x < x + NODE_W && p.x + NODE_W > x)
    .sort((a, b) => a.y - b.y);
  for (const p of column) if (p.y < y + NODE_H + NODESEP && p.y + NODE_H + NODESEP > y) y = p.y + NODE_H + NODESEP;
  const a = { x: from.x + NODE_W, y: from.y + NODE_H / 2 };
  const b = { x, y: y + NODE_H / 2 };
  let k = 0;
  const edges = graph.edges.map((e) => (e === fresh ? { ...e, points: [a, b], lx: (a.x + b.x) / 2, ly: (a.y + b.y) / 2 } : prev.edges[k++]));
  return {
    nodes: { ...prev.nodes, [id]: { x, y } },
    edges,
    width: Math.max(prev.width, x + NODE_W + MARGIN),
    height: Math.max(prev.height, y + NODE_H + MARGIN),
  };
}

function path(points) {
  if (!points || points.length === 0) return "";
  let d = `M${points[0].x},${points[0].y}`;
  if (points.length === 2) return d + ` L${points[1].x},${points[1].y}`;
  for (let i = 1; i < points.length - 1; i++) {
    const p = points[i];
    const q = points[i + 1];
    const mx = i === points.length - 2 ? q.x : (p.x + q.x) / 2;
    const my = i === points.length - 2 ? q.y : (p.y + q.y) / 2;
    d += ` Q${p.x},${p.y} ${mx},${my}`;
  }
  return d;
}

// label is what a node's badge says of its status.
export function shownStatus(st) {
  if (!st || !st.status) return "pending";
  if (st.status === "success" && st.pinned) return "pinned";
  if (st.status === "success" && st.cached) return "cached";
  return st.status;
}

const Node = memo(function Node({ n, pos, st, selected, pinned, problem, editing, onSelect }) {
  // In the editor a node has no run status: its badge says "invalid"
  // when a diagnostic names it, else nothing.
  const status = editing ? (problem ? "invalid" : "") : shownStatus(st);
  const metrics = [];
  if (st && st.visits > 1) metrics.push(`×${st.visits}`);
  if (st && st.duration) metrics.push(duration(st.duration));
  if (st && st.tokens) metrics.push(tokens(st.tokens));
  if (st && st.cost) metrics.push(cost(st.cost));
  const shownID = n.id.length > 20 ? n.id.slice(0, 19) + "…" : n.id;
  // The accessible name holds the visible text, in order (WCAG 2.5.3).
  const label = [shownID, n.type, status, metrics.join(" · "), pinned ? "pinned" : "", n.disabled && editing ? "disabled" : ""].filter(Boolean).join(" ");
  const key = (ev) => {
    if (ev.key === "Enter" || ev.key === " ") {
      ev.preventDefault();
      onSelect(n.id);
    }
  };
  return (
    <g
      class={`node s-${status || "none"}${selected ? " selected" : ""}${pinned ? " pin" : ""}${n.disabled ? " disabled" : ""}${problem ? " problem" : ""}`}
      transform={`translate(${pos.x},${pos.y})`}
      tabindex="0"
      role="button"
      aria-label={label}
      aria-pressed={selected ? "true" : "false"}
      data-node={n.id}
      data-status={status}
      data-problem={problem ? "true" : undefined}
      onClick={() => onSelect(n.id)}
      onKeyDown={key}
    >
      <rect class="box" width={NODE_W} height={NODE_H} rx="8" />
      <rect class="bar" width="6" height={NODE_H} rx="3" />
      <text class="id" x="14" y="20">{shownID}</text>
      {/* The leading spaces (not drawn) part the words of the text
          content, which the accessible name must contain. */}
      <text class="type" x="14" y="36">{" " + n.type}</text>
      <text class="status" x={NODE_W - 10} y="20" text-anchor="end">{status ? " " + status : ""}</text>
      <text class="metrics" x="14" y="53">{metrics.length ? " " + metrics.join(" · ") : ""}</text>
      {pinned ? <text class="pinmark" x={NODE_W - 10} y="53" text-anchor="end">{" pinned"}</text> : null}
      {n.disabled && editing ? <text class="pinmark" x={NODE_W - 10} y="53" text-anchor="end">{" disabled"}</text> : null}
    </g>
  );
});

// fitView is the view that shows the whole graph in a pane of width w:
// the graph at its size when it fits, else scaled down to fit.
function fitView(lay, w) {
  const h = Math.min(lay.height, MAX_H);
  const k = Math.min(1, w > 0 ? w / lay.width : 1, h / lay.height);
  return { k, x: 0, y: 0 };
}

const clampZoom = (k) => Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, k));

// Graph draws the graph in a pane that fits it on open; the wheel and
// the buttons zoom, dragging the background pans. states: node id →
// {status, visits, duration, tokens, cost, cached, pinned}; taken: node
// id → the handles it chose. editing: the editor's graph, whose nodes
// have no status; problems: the ids of the nodes a diagnostic names.
// connect (the editor's): {handles: node id → its handles, onConnect(from,
// handle, to), onDisconnect(edge)} draws the handles that connect nodes
// (handles.jsx) and lets an edge be selected and removed.
export function Graph({ graph, lay, states = {}, taken = {}, selected, pins, onSelect, label, editing, problems, connect }) {
  const select = onSelect || (() => {});
  const wrap = useRef(null);
  const svg = useRef(null);
  const wires = useWire(svg, (from, handle, to) => connect && connect.onConnect(from, handle, to));
  const [pick, setPick] = useState(null); // {from, handle, el}: the keyboard's connection
  const onPick = useCallback((from, handle, el) => setPick({ from, handle, el }), []);
  const [selEdge, setSelEdge] = useState(null);
  const [width, setWidth] = useState(0);
  const [view, setView] = useState(null); // {k, x, y}: scale, then the graph point at the pane's top left
  const drag = useRef(null);

  useLayoutEffect(() => {
    const el = wrap.current;
    const measure = () => setWidth(el.clientWidth);
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  // A new graph opens fitted.
  useEffect(() => setView(null), [lay]);

  const fit = fitView(lay, width);
  const height = Math.max(80, Math.ceil(lay.height * fit.k));
  const v = view || fit;
  // zoomAt scales by f around the pane's point (px, py).
  const zoomAt = (f, px, py) =>
    setView((cur) => {
      const c = cur || fit;
      const k = clampZoom(c.k * f);
      return { k, x: c.x + px / c.k - px / k, y: c.y + py / c.k - py / k };
    });

  useEffect(() => {
    const el = wrap.current.querySelector("svg");
    const wheel = (ev) => {
      ev.preventDefault();
      const r = el.getBoundingClientRect();
      zoomAt(ev.deltaY < 0 ? 1.1 : 1 / 1.1, ev.clientX - r.left, ev.clientY - r.top);
    };
    el.addEventListener("wheel", wheel, { passive: false });
    return () => el.removeEventListener("wheel", wheel);
  });

  const down = (ev) => {
    if (ev.button !== 0 || ev.target.closest("g.node, g.hnd, g.edge.pickable")) return;
    drag.current = { x: ev.clientX, y: ev.clientY, v };
    ev.currentTarget.setPointerCapture(ev.pointerId);
  };
  const move = (ev) => {
    if (wires.move(ev)) return;
    const d = drag.current;
    if (!d) return;
    setView({ k: d.v.k, x: d.v.x - (ev.clientX - d.x) / d.v.k, y: d.v.y - (ev.clientY - d.y) / d.v.k });
  };
  const up = (ev) => {
    if (wires.end(ev, ev.type === "pointercancel")) return;
    drag.current = null;
  };
  const closePick = () => {
    const el = pick && pick.el;
    setPick(null);
    if (el && el.isConnected) el.focus();
  };
  // The selected edge, while the graph still has it.
  const sameEdge = (a, b) => a.from === b.from && a.to === b.to && (a.on || "") === (b.on || "");
  const edge = selEdge && lay.edges.some((e) => !e.back && sameEdge(e, selEdge)) ? selEdge : null;
  const edgeOf = (e) => (connect ? edgeStart(lay, connect.handles, e.from, e.on, NODE_W, NODE_H) : null);

  return (
    <div class="graph-wrap" ref={wrap}>
      <div class="zoom" role="toolbar" aria-label="Zoom">
        <button type="button" aria-label="Zoom in" title="Zoom in" onClick={() => zoomAt(ZOOM_STEP, width / 2, height / 2)}>
          +
        </button>
        <button type="button" aria-label="Zoom out" title="Zoom out" onClick={() => zoomAt(1 / ZOOM_STEP, width / 2, height / 2)}>
          −
        </button>
        <button type="button" onClick={() => setView(null)}>
          Fit
        </button>
        <span class="zoom-level" aria-live="polite">
          {Math.round(v.k * 100)}%
        </span>
      </div>
      {connect && pick ? <ConnectPicker pick={pick} graph={graph} onConnect={connect.onConnect} onClose={closePick} /> : null}
      {connect && edge ? <EdgeBar edge={edge} onRemove={connect.onDisconnect} onClose={() => setSelEdge(null)} /> : null}
      <svg
        ref={svg}
        class={`graph${drag.current ? " panning" : ""}${connect ? " connecting" : ""}`}
        width="100%"
        height={height}
        viewBox={`${v.x} ${v.y} ${width > 0 ? width / v.k : lay.width} ${height / v.k}`}
        preserveAspectRatio="xMinYMin meet"
        role="group"
        aria-label={label || "workflow graph"}
        onPointerDown={down}
        onPointerMove={move}
        onPointerUp={up}
        onPointerCancel={up}
      >
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" class="arrowhead" />
          </marker>
        </defs>
        <g class="edges" aria-hidden="true">
          {lay.edges.map((e, i) => {
            const chose = taken[e.from];
            let mark = "";
            if (chose && chose.size) mark = chose.has(e.on || "") ? " taken" : " not-taken";
            const s = edgeOf(e);
            const points = s ? [s, ...e.points.slice(1)] : e.points;
            const on = edge && sameEdge(edge, e);
            const pickable = connect && !e.back;
            return (
              <g
                key={i}
                class={`edge${e.back ? " back" : ""}${mark}${on ? " selected" : ""}${pickable ? " pickable" : ""}`}
                data-from={e.from}
                data-to={e.to}
                data-on={e.on || ""}
                data-taken={mark === " taken" ? "true" : mark ? "false" : ""}
                onClick={pickable ? () => setSelEdge(e) : undefined}
              >
                {pickable ? <path class="hit" d={path(points)} /> : null}
                <path d={path(points)} marker-end="url(#arrow)" />
                {e.on ? (
                  <text x={e.lx} y={e.ly + 4} text-anchor="middle" class="handle">{e.on}</text>
                ) : null}
              </g>
            );
          })}
        </g>
        <g class="nodes">
          {graph.nodes.map((n) => (
            <Fragment key={n.id}>
              <Node
                n={n}
                pos={lay.nodes[n.id]}
                st={states[n.id]}
                selected={selected === n.id}
                pinned={pins ? pins.has(n.id) : false}
                problem={problems ? problems.has(n.id) : false}
                editing={!!editing}
                onSelect={select}
              />
              {connect ? (
                <NodeHandles
                  id={n.id}
                  pos={lay.nodes[n.id]}
                  handles={connect.handles[n.id]}
                  w={NODE_W}
                  h={NODE_H}
                  focusable={selected === n.id}
                  onStart={wires.start}
                  onPick={onPick}
                />
              ) : null}
            </Fragment>
          ))}
        </g>
        {connect ? <Wire wire={wires.wire} lay={lay} w={NODE_W} h={NODE_H} /> : null}
      </svg>
    </div>
  );
}
