// Connecting nodes in the editor's graph. Each node shows an output
// handle per handle its kind has (from the draft's validation: an if's
// true and false, a switch's cases, error with on_error: route) and an
// input point. Dragging a handle onto another node (mouse, pen or touch:
// pointer events) connects them; so does the keyboard: Enter or Space on a
// handle opens a list of the nodes to connect it to. A click on an edge
// selects it, and Delete (or its Remove button) disconnects it.
import { memo } from "./memo.js";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";

// The handles sit on a node's right side, evenly apart; the input point
// on its left side, in the middle.
const HANDLE_R = 6;
const HIT_R = 12; // what a finger or the pointer catches

// handleY is the height of handle i of n on a node of height h.
const handleY = (i, n, h) => (h * (i + 1)) / (n + 1);

// label is how a handle is named to people: "" is the default handle.
export const handleLabel = (h) => (h ? h : "default");

// edgeStart is where an edge leaving handle on of node from starts, when
// that node shows the handle; else null (the layout's point stays).
export function edgeStart(lay, handles, from, on, w, h) {
  const hs = handles[from];
  const p = lay.nodes[from];
  if (!hs || !p) return null;
  const i = hs.indexOf(on || "");
  if (i < 0) return null;
  return { x: p.x + w, y: p.y + handleY(i, hs.length, h) };
}

// NodeHandles draws node id's handles and its input point. Only the
// selected node's handles take the focus with Tab, so the graph's tab
// order stays one stop per node; select a node to reach its handles.
// Its props stay the same while a wire is dragged, so it is not redrawn.
export const NodeHandles = memo(function NodeHandles({ id, pos, handles, w, h, focusable, onStart, onPick }) {
  if (!pos) return null;
  return (
    <g class="hnds" transform={`translate(${pos.x},${pos.y})`} data-handles-of={id}>
      <circle class="hnd-in" cx="0" cy={h / 2} r={HANDLE_R - 1} aria-hidden="true" />
      {(handles || []).map((hd, i) => {
        const y = handleY(i, handles.length, h);
        const key = (ev) => {
          if (ev.key === "Enter" || ev.key === " ") {
            ev.preventDefault();
            ev.stopPropagation();
            onPick(id, hd, ev.currentTarget);
          }
        };
        return (
          <g
            key={hd}
            class="hnd"
            data-node-handle={id}
            data-handle={hd}
            tabindex={focusable ? "0" : "-1"}
            role="button"
            aria-label={`${handleLabel(hd)}: connect ${id} from handle ${handleLabel(hd)}`}
            onPointerDown={(ev) => onStart(ev, id, hd, pos.x + w, pos.y + y)}
            onKeyDown={key}
          >
            <circle class="hit" cx={w} cy={y} r={HIT_R} />
            <circle class="dot" cx={w} cy={y} r={HANDLE_R} />
            {hd ? (
              <text class="hnd-label" x={w + HANDLE_R + 3} y={y - HANDLE_R - 1}>
                {hd}
              </text>
            ) : null}
          </g>
        );
      })}
    </g>
  );
});

// nodeAt is the id of the graph node under the page point (x, y), if any.
function nodeAt(x, y) {
  const el = document.elementFromPoint(x, y);
  const g = el && el.closest("g.node");
  return g ? g.dataset.node : "";
}

// useWire is a connection being dragged: start it on a handle's pointer
// down; the graph's pointer move and up go to move and end first (each
// says whether it took the event). svg is the graph's SVG element, whose
// screen transform maps the pointer to graph points.
export function useWire(svg, onConnect) {
  const [wire, setWire] = useState(null); // {from, handle, x1, y1, x2, y2, over}
  const cur = useRef(null);
  const point = (ev) => {
    const m = svg.current.getScreenCTM();
    if (!m) return { x: 0, y: 0 };
    const p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(m.inverse());
    return { x: p.x, y: p.y };
  };
  const set = (w) => {
    cur.current = w;
    setWire(w);
  };
  const start = useCallback((ev, from, handle, x, y) => {
    if (ev.button !== 0) return;
    ev.preventDefault();
    ev.stopPropagation();
    svg.current.setPointerCapture(ev.pointerId);
    cur.current = { from, handle, x1: x, y1: y, x2: x, y2: y, over: "" };
    setWire(cur.current);
  }, []);
  const move = (ev) => {
    const w = cur.current;
    if (!w) return false;
    const p = point(ev);
    const over = nodeAt(ev.clientX, ev.clientY);
    set({ ...w, x2: p.x, y2: p.y, over: over !== w.from ? over : "" });
    return true;
  };
  const end = (ev, cancel) => {
    const w = cur.current;
    if (!w) return false;
    set(null);
    const to = cancel ? "" : nodeAt(ev.clientX, ev.clientY);
    if (to && to !== w.from) onConnect(w.from, w.handle, to);
    return true;
  };
  return { wire, start, move, end };
}

// Wire draws the connection being dragged, and marks the node it would
// connect to.
export function Wire({ wire, lay, w, h }) {
  if (!wire) return null;
  const p = wire.over ? lay.nodes[wire.over] : null;
  return (
    <g class="wire" aria-hidden="true">
      {p ? <rect class="drop" x={p.x - 3} y={p.y - 3} width={w + 6} height={h + 6} rx="10" /> : null}
      <path d={`M${wire.x1},${wire.y1} C${wire.x1 + 40},${wire.y1} ${wire.x2 - 40},${wire.y2} ${wire.x2},${wire.y2}`} />
    </g>
  );
}

// ConnectPicker is the keyboard's way to connect: the handle chosen, the
// nodes it may go to (not itself, nor one it already goes to from that
// handle), Connect and Cancel. Escape cancels; the focus goes back to the
// handle.
export function ConnectPicker({ pick, graph, onConnect, onClose }) {
  const sel = useRef(null);
  const targets = graph.nodes
    .map((n) => n.id)
    .filter((id) => id !== pick.from && !graph.edges.some((e) => !e.back && e.from === pick.from && e.to === id && (e.on || "") === pick.handle));
  const [to, setTo] = useState(targets[0] || "");
  useEffect(() => {
    if (sel.current) sel.current.focus();
  }, [pick.from, pick.handle]);
  const key = (ev) => {
    if (ev.key === "Escape") {
      ev.preventDefault();
      onClose();
    }
  };
  const submit = (ev) => {
    ev.preventDefault();
    if (to) onConnect(pick.from, pick.handle, to);
    onClose();
  };
  return (
    <form class="connect-pick" role="group" aria-labelledby="cp-h" onKeyDown={key} onSubmit={submit}>
      <span id="cp-h">
        Connect <b>{pick.from}</b> from handle <b>{handleLabel(pick.handle)}</b>
      </span>{" "}
      {targets.length ? (
        <>
          <label for="cp-to">to node</label>{" "}
          <select id="cp-to" ref={sel} value={to} onChange={(e) => setTo(e.currentTarget.value)}>
            {targets.map((id) => (
              <option value={id}>{id}</option>
            ))}
          </select>{" "}
          <button type="submit" class="primary">
            Connect
          </button>
        </>
      ) : (
        <span class="muted">: no node left to connect to.</span>
      )}{" "}
      <button type="button" ref={targets.length ? undefined : sel} onClick={onClose}>
        Cancel
      </button>
    </form>
  );
}

// EdgeBar is the selected edge: Remove edge (or Delete) disconnects it,
// Escape or Cancel lets it go.
export function EdgeBar({ edge, onRemove, onClose }) {
  const rm = useRef(null);
  useEffect(() => {
    if (rm.current) rm.current.focus();
  }, [edge.from, edge.to, edge.on]);
  const key = (ev) => {
    if (ev.key === "Delete" || ev.key === "Backspace") {
      ev.preventDefault();
      onRemove(edge);
      onClose();
    } else if (ev.key === "Escape") {
      ev.preventDefault();
      onClose();
    }
  };
  const name = `${edge.from} → ${edge.to}${edge.on ? ` (${edge.on})` : ""}`;
  return (
    <div class="edge-bar" role="group" aria-label={`Edge ${name}`} onKeyDown={key}>
      <span>
        Edge <span class="mono">{name}</span>
      </span>{" "}
      <button type="button" class="danger" ref={rm} onClick={() => (onRemove(edge), onClose())}>
        Remove edge
      </button>{" "}
      <button type="button" onClick={onClose}>
        Cancel
      </button>
    </div>
  );
}

// Connections lists the edges that leave node id, each with a button that
// removes it: the keyboard's way to disconnect.
export function Connections({ id, graph, onRemove }) {
  const out = graph.edges.filter((e) => e.from === id && !e.back);
  return (
    <section class="connections" aria-labelledby="conn-h">
      <h3 id="conn-h">Connections</h3>
      {out.length === 0 ? <p class="muted">No edge leaves {id}. Drag a handle onto a node, or press Enter on a handle, to connect it.</p> : null}
      <ul>
        {out.map((e) => {
          const name = `${e.to}${e.on ? ` (${e.on})` : ""}`;
          return (
            <li data-edge-to={e.to} data-edge-on={e.on || ""}>
              → <span class="mono">{name}</span>{" "}
              <button type="button" class="link" aria-label={`Remove edge to ${name}`} onClick={() => onRemove(e)}>
                Remove
              </button>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
