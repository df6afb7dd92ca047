// memo is a component that renders fn again only when one of its props
// changed (compared with ===), as preact/compat's memo does. The page
// does not import preact/compat: its global vnode hook rewrites the props
// of every element the page draws, a tenth of the time a 200-node graph
// takes to show.
import { Component } from "preact";

export function memo(fn) {
  class Memo extends Component {
    shouldComponentUpdate(next) {
      for (const k in next) if (next[k] !== this.props[k]) return true;
      for (const k in this.props) if (!(k in next)) return true;
      return false;
    }
    render(props) {
      return fn(props);
    }
  }
  Memo.displayName = `memo(${fn.name || "component"})`;
  return Memo;
}
