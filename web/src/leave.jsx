// LeaveGuard asks before the editor is left with changes not saved: a
// link or the address bar changing the page's hash gets a dialog (Stay,
// or Leave and lose the changes); closing or reloading the tab gets the
// browser's own question (beforeunload).
import { useEffect, useRef, useState } from "preact/hooks";

// guard is the mounted LeaveGuard's state: {dirty, leaving, ask(url)}.
let guard = null;

// The hash listener is added when the bundle loads, before the router's
// (main.jsx), so it runs first: it keeps the router from hearing of the
// change (which would unmount the editor at once) and puts the editor's
// address back until the answer.
addEventListener("hashchange", (ev) => {
  const g = guard;
  if (!g || !g.dirty || g.leaving) return;
  ev.stopImmediatePropagation();
  history.replaceState(history.state, "", ev.oldURL);
  g.ask(ev.newURL);
});

export function LeaveGuard({ dirty }) {
  const [to, setTo] = useState(""); // the URL asked for
  const state = useRef({ dirty, leaving: false, ask: setTo });
  state.current.dirty = dirty;
  const stay = useRef(null);

  useEffect(() => {
    const g = state.current;
    guard = g;
    const unload = (ev) => {
      if (!g.dirty) return;
      ev.preventDefault();
      ev.returnValue = "";
    };
    addEventListener("beforeunload", unload);
    return () => {
      if (guard === g) guard = null;
      removeEventListener("beforeunload", unload);
    };
  }, []);
  useEffect(() => {
    if (to && stay.current) stay.current.focus();
  }, [to]);

  if (!to) return null;
  const leave = () => {
    state.current.leaving = true;
    setTo("");
    location.href = to;
  };
  const key = (ev) => {
    if (ev.key === "Escape") {
      ev.preventDefault();
      setTo("");
    }
  };
  return (
    <div class="leave-guard" role="alertdialog" aria-modal="true" aria-labelledby="leave-h" aria-describedby="leave-d" onKeyDown={key}>
      <h2 id="leave-h">Leave the editor?</h2>
      <p id="leave-d">Your changes to this workflow are not saved. Leaving loses them.</p>
      <button type="button" class="primary" ref={stay} onClick={() => setTo("")}>
        Stay
      </button>{" "}
      <button type="button" class="danger" onClick={leave}>
        Leave
      </button>
    </div>
  );
}
