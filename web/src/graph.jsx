// A workflow's graph, laid out left to right by dagre, drawn as SVG.
// Each node is a badge (status, visits, duration, tokens, cost) that the
// keyboard reaches and selects; back edges (loops) are dashed; an edge's
// handle is its label; the branch a control node took is marked.
import { graphlib, layout as dagreLayout } from "@dagrejs/dagre";
import { memo } from "preact/compat";
import { cost, duration, tokens } from "./format.js";

const NODE_W = 176;
const NODE_H = 62;

// layout places the graph's nodes and routes its edges.
export function layout(graph) {
  const g = new graphlib.Graph({ multigraph: true });
  // dagre's default ranker (network simplex) takes ~0.5 s on 500 nodes;
  // tight-tree ranks a large graph in a third of that, nearly as well.
  const ranker = graph.nodes.length > 150 ? "tight-tree" : "network-simplex";
  g.setGraph({ rankdir: "LR", nodesep: 22, ranksep: 60, edgesep: 14, marginx: 12, marginy: 12, ranker });
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

const Node = memo(function Node({ n, pos, st, selected, pinned, onSelect }) {
  const status = shownStatus(st);
  const metrics = [];
  if (st && st.visits > 1) metrics.push(`×${st.visits}`);
  if (st && st.duration) metrics.push(duration(st.duration));
  if (st && st.tokens) metrics.push(tokens(st.tokens));
  if (st && st.cost) metrics.push(cost(st.cost));
  const shownID = n.id.length > 20 ? n.id.slice(0, 19) + "…" : n.id;
  // The accessible name holds the visible text, in order (WCAG 2.5.3).
  const label = [shownID, n.type, status, metrics.join(" · "), pinned ? "pinned" : ""].filter(Boolean).join(" ");
  const key = (ev) => {
    if (ev.key === "Enter" || ev.key === " ") {
      ev.preventDefault();
      onSelect(n.id);
    }
  };
  return (
    <g
      class={`node s-${status}${selected ? " selected" : ""}${pinned ? " pin" : ""}${n.disabled ? " disabled" : ""}`}
      transform={`translate(${pos.x},${pos.y})`}
      tabindex="0"
      role="button"
      aria-label={label}
      aria-pressed={selected ? "true" : "false"}
      data-node={n.id}
      data-status={status}
      onClick={() => onSelect(n.id)}
      onKeyDown={key}
    >
      <rect class="box" width={NODE_W} height={NODE_H} rx="8" />
      <rect class="bar" width="6" height={NODE_H} rx="3" />
      <text class="id" x="14" y="20">{shownID}</text>
      {/* The leading spaces (not drawn) part the words of the text
          content, which the accessible name must contain. */}
      <text class="type" x="14" y="36">{" " + n.type}</text>
      <text class="status" x={NODE_W - 10} y="20" text-anchor="end">{" " + status}</text>
      <text class="metrics" x="14" y="53">{metrics.length ? " " + metrics.join(" · ") : ""}</text>
      {pinned ? <text class="pinmark" x={NODE_W - 10} y="53" text-anchor="end">{" pinned"}</text> : null}
    </g>
  );
});

// Graph draws the graph. states: node id → {status, visits, duration,
// tokens, cost, cached, pinned}; taken: node id → the handles it chose.
export function Graph({ graph, lay, states = {}, taken = {}, selected, pins, onSelect, label }) {
  const select = onSelect || (() => {});
  return (
    <div class="graph-wrap">
      <svg
        class="graph"
        width={lay.width}
        height={lay.height}
        viewBox={`0 0 ${lay.width} ${lay.height}`}
        role="group"
        aria-label={label || "workflow graph"}
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
            return (
              <g key={i} class={`edge${e.back ? " back" : ""}${mark}`} data-from={e.from} data-to={e.to} data-on={e.on || ""} data-taken={mark === " taken" ? "true" : mark ? "false" : ""}>
                <path d={path(e.points)} marker-end="url(#arrow)" />
                {e.on ? (
                  <text x={e.lx} y={e.ly + 4} text-anchor="middle" class="handle">{e.on}</text>
                ) : null}
              </g>
            );
          })}
        </g>
        <g class="nodes">
          {graph.nodes.map((n) => (
            <Node
              key={n.id}
              n={n}
              pos={lay.nodes[n.id]}
              st={states[n.id]}
              selected={selected === n.id}
              pinned={pins ? pins.has(n.id) : false}
              onSelect={select}
            />
          ))}
        </g>
      </svg>
    </div>
  );
}
