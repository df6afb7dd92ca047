package edit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Op is one edit of a workflow file. It is JSON so the browser can send it.
type Op struct {
	// Op is what to do: set, unset, add_node, remove_node, rename_node,
	// connect, disconnect, disable, enable, duplicate.
	Op string `json:"op"`
	// Node is the id of the node edited (the source node of connect and
	// disconnect).
	Node string `json:"node,omitempty"`
	// Path is, for set and unset, the keys under the node: ["timeout"],
	// ["values", "lane"], ["checks", "0", "on_fail"]. A list is indexed
	// by number; "-" (or the list's length) appends to it.
	Path []string `json:"path,omitempty"`
	// Value is, for set, the new value (any JSON type); for add_node, the
	// node's fields.
	Value json.RawMessage `json:"value,omitempty"`
	// To is the target node of connect and disconnect, and the new id of
	// rename_node and duplicate.
	To string `json:"to,omitempty"`
	// Handle is the source's output handle an edge leaves from (an if's
	// "true" or "false", a switch's case); "" is the default handle.
	Handle string `json:"handle,omitempty"`
}

// Conditions an OpError wraps.
var (
	// ErrBadOp is an op that is not well formed: an unknown op, a
	// missing value or target.
	ErrBadOp = errors.New("bad op")
	// ErrUnknownNode is an op naming a node the file does not have.
	ErrUnknownNode = errors.New("unknown node")
	// ErrUnknownEdge is a disconnect of an edge the file does not have.
	ErrUnknownEdge = errors.New("unknown edge")
	// ErrBadPath is a path that does not lead to a value of the node.
	ErrBadPath = errors.New("bad path")
	// ErrClash is a node id or an edge that is already there.
	ErrClash = errors.New("already there")
	// ErrLayout is text the editor does not rewrite in place: a value
	// with an anchor, an alias or a tag, a complex key. Edit it as text.
	ErrLayout = errors.New("layout not editable")
	// ErrParse is a file that does not parse.
	ErrParse = errors.New("file does not parse")
)

// OpError is an op that could not be applied.
type OpError struct {
	Index int    // the op's place in the list, from 0
	Op    string // its op
	Node  string // the node it edits
	Err   error
}

func (e *OpError) Error() string {
	if e.Node == "" {
		return fmt.Sprintf("op %d (%s): %v", e.Index, e.Op, e.Err)
	}
	return fmt.Sprintf("op %d (%s %q): %v", e.Index, e.Op, e.Node, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// condError is a message that wraps one of the conditions above.
type condError struct {
	cond error
	msg  string
}

func (e *condError) Error() string        { return e.msg }
func (e *condError) Is(target error) bool { return target == e.cond }

func errf(cond error, format string, args ...any) error {
	return &condError{cond, fmt.Sprintf(format, args...)}
}

// Apply applies ops in order to the text of a workflow file (YAML or
// JSON; name tells which, as for workflow.Decode) and returns the new
// text. Only the bytes of changed values and of added and removed entries
// change: comments, key order, quoting and layout elsewhere stay as they
// were. An op that cannot be applied returns an *OpError naming the op,
// its node and what to do; src is never changed.
func Apply(src []byte, name string, ops []Op) ([]byte, error) {
	d, err := parse(src, name)
	if errors.Is(err, errLayout) {
		return nil, fmt.Errorf("%s: %w", name, errf(ErrLayout, "the file has a construct the editor does not read (a comment between a list's dash and its element, or a complex key); edit it as text"))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, errf(ErrParse, "%v", err))
	}
	if d.root.kind != 'm' {
		return nil, fmt.Errorf("%s: %w", name, errf(ErrParse, "the file is not a map of workflow fields"))
	}
	for i, op := range ops {
		next, err := d.apply(op)
		if err != nil {
			if errors.Is(err, errLayout) {
				err = errf(ErrLayout, "the text this op changes in %s has an anchor, alias, tag or complex key, which the editor does not rewrite; edit it as text", name)
			}
			return nil, &OpError{Index: i, Op: op.Op, Node: op.Node, Err: err}
		}
		if d, err = d.reparse(next); err != nil {
			return nil, &OpError{Index: i, Op: op.Op, Node: op.Node, Err: errf(ErrLayout, "the edit would leave the file unreadable (%v); edit it as text", err)}
		}
	}
	return bytes.Clone(d.src), nil
}

// reparse parses the text an op wrote, in the file's format.
func (d *doc) reparse(src []byte) (*doc, error) {
	nd := &doc{src: src, lines: lineStarts(src), step: d.step}
	if d.json {
		root, err := nd.parseJSON()
		if err != nil {
			return nil, err
		}
		nd.json, nd.root = true, root
	} else if err := nd.parseYAML(); err != nil {
		return nil, err
	}
	if nd.root.kind != 'm' {
		return nil, errLayout
	}
	nd.step = d.step
	return nd, nil
}

func (d *doc) apply(op Op) ([]byte, error) {
	switch op.Op {
	case "set":
		return d.set(op.Node, op.Path, op.Value)
	case "unset":
		return d.unset(op.Node, op.Path, false)
	case "disable":
		return d.set(op.Node, []string{"disabled"}, json.RawMessage("true"))
	case "enable":
		return d.unset(op.Node, []string{"disabled"}, true)
	case "add_node":
		return d.addNode(op.Node, op.Value)
	case "remove_node":
		return d.removeNode(op.Node)
	case "rename_node":
		return d.renameNode(op.Node, op.To)
	case "duplicate":
		return d.duplicate(op.Node, op.To)
	case "connect":
		return d.connect(op.Node, op.To, op.Handle)
	case "disconnect":
		return d.disconnect(op.Node, op.To, op.Handle)
	}
	return nil, errf(ErrBadOp, "unknown op %q; the ops are set, unset, add_node, remove_node, rename_node, connect, disconnect, disable, enable and duplicate", op.Op)
}

// A splice replaces the bytes [start, end) with text.
type splice struct {
	start, end int
	text       string
}

// write returns the text with the splices made (they do not overlap).
func (d *doc) write(sps ...splice) []byte {
	sort.Slice(sps, func(i, j int) bool { return sps[i].start > sps[j].start })
	crlf := bytes.Contains(d.src, []byte("\r\n"))
	out := bytes.Clone(d.src)
	for _, sp := range sps {
		text := sp.text
		if crlf {
			text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n")
		}
		out = append(out[:sp.start:sp.start], append([]byte(text), out[sp.end:]...)...)
	}
	return out
}

// A slot is where a value sits: under a key of a map or in a list.
type slot struct {
	e      *entry
	it     *item
	parent *tnode
	index  int
	inFlow bool // inside a flow collection
}

func (s slot) val() *tnode {
	if s.e != nil {
		return s.e.val
	}
	return s.it.val
}

// nodeList returns the nodes list.
func (d *doc) nodeList() *tnode {
	if e := d.root.get("nodes"); e != nil && e.val.kind == 'l' {
		return e.val
	}
	return nil
}

func idOf(t *tnode) (string, *tnode) {
	if t.kind != 'm' {
		return "", nil
	}
	if e := t.get("id"); e != nil && e.val.kind == 's' && !e.val.null {
		return e.val.text, e.val
	}
	return "", nil
}

// node finds a node by id.
func (d *doc) node(id string) (slot, error) {
	if id == "" {
		return slot{}, errf(ErrBadOp, "the op names no node (node is empty)")
	}
	l := d.nodeList()
	if l == nil {
		return slot{}, errf(ErrUnknownNode, "no node %q: the file has no nodes list", id)
	}
	var ids []string
	for i, it := range l.items {
		nid, _ := idOf(it.val)
		if nid == id {
			return slot{it: it, parent: l, index: i, inFlow: l.flow}, nil
		}
		if nid != "" {
			ids = append(ids, nid)
		}
	}
	return slot{}, errf(ErrUnknownNode, "no node %q in the file%s", id, listOf("the nodes are", ids))
}

// listOf names a few of the things there are.
func listOf(what string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	more := ""
	if len(names) > 12 {
		names, more = names[:12], ", …"
	}
	return fmt.Sprintf("; %s %s%s", what, strings.Join(names, ", "), more)
}

func checkPath(path []string) error {
	if len(path) == 0 {
		return errf(ErrBadPath, `the path is empty; give the keys under the node, such as ["timeout"]`)
	}
	if path[0] == "id" {
		return errf(ErrBadPath, "a node's id changes with rename_node, which also updates its edges")
	}
	for _, p := range path {
		if p == "" {
			return errf(ErrBadPath, "the path %q holds an empty key", strings.Join(path, "."))
		}
	}
	return nil
}

// listIndex reads a list index: a number below n, or n or "-" to append.
func listIndex(seg string, n int) (int, bool) {
	if seg == "-" {
		return n, true
	}
	i, err := strconv.Atoi(seg)
	return i, err == nil && i >= 0 && i <= n && seg == strconv.Itoa(i)
}

func (d *doc) set(id string, path []string, raw json.RawMessage) ([]byte, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	cur, err := d.node(id)
	if err != nil {
		return nil, err
	}
	v, err := readValue(raw)
	if err != nil {
		return nil, errf(ErrBadOp, "set needs a value: %v", err)
	}
	for i, seg := range path {
		t, rest := cur.val(), path[i+1:]
		if t.fixed {
			return nil, errLayout
		}
		inFlow := cur.inFlow || t.flow
		switch {
		case t.kind == 'm':
			j := -1
			for k, e := range t.entries {
				if e.key == seg {
					j = k
				}
			}
			if j < 0 {
				sp, err := d.insert(t, inFlow, seg, nest(rest, v))
				if err != nil {
					return nil, err
				}
				return d.write(sp), nil
			}
			cur = slot{e: t.entries[j], parent: t, index: j, inFlow: inFlow}
		case t.kind == 'l':
			j, ok := listIndex(seg, len(t.items))
			if !ok {
				return nil, errf(ErrBadPath, "%s is a list of %d; %q is not an index of it (0 to %d, or - to add one)", strings.Join(path[:i], "."), len(t.items), seg, len(t.items))
			}
			if j == len(t.items) {
				sp, err := d.appendItem(t, inFlow, nest(rest, v))
				if err != nil {
					return nil, err
				}
				return d.write(sp), nil
			}
			cur = slot{it: t.items[j], parent: t, index: j, inFlow: inFlow}
		case t.null:
			sp, err := d.replace(cur, nest(path[i:], v))
			if err != nil {
				return nil, err
			}
			return d.write(sp), nil
		default:
			return nil, errf(ErrBadPath, "%s is a single value, not a map or a list, so it has no %q", strings.Join(path[:i], "."), seg)
		}
	}
	sp, err := d.replace(cur, v)
	if err != nil {
		return nil, err
	}
	return d.write(sp), nil
}

// unset removes the value at path; quiet tells that a missing one is no
// error (enable of a node that is not disabled).
func (d *doc) unset(id string, path []string, quiet bool) ([]byte, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	cur, err := d.node(id)
	if err != nil {
		return nil, err
	}
	parents := []slot{cur}
	for i, seg := range path {
		t := cur.val()
		inFlow := cur.inFlow || t.flow
		found := false
		switch t.kind {
		case 'm':
			for k, e := range t.entries {
				if e.key == seg {
					cur, found = slot{e: e, parent: t, index: k, inFlow: inFlow}, true
				}
			}
		case 'l':
			if j, ok := listIndex(seg, len(t.items)); ok && j < len(t.items) {
				cur, found = slot{it: t.items[j], parent: t, index: j, inFlow: inFlow}, true
			}
		}
		if !found {
			if quiet {
				return d.src, nil
			}
			return nil, errf(ErrBadPath, "node %q has no %s", id, strings.Join(path[:i+1], "."))
		}
		if i < len(path)-1 {
			parents = append(parents, cur)
		}
	}
	sp, err := d.remove(cur, parents[len(parents)-1])
	if err != nil {
		return nil, err
	}
	return d.write(sp), nil
}

// replace writes v in place of the value in s.
func (d *doc) replace(s slot, v *jval) (splice, error) {
	old := s.val()
	if old.fixed {
		return splice{}, errLayout
	}
	switch {
	case d.json:
		multi := old.end > old.start && d.lineOf(old.start) != d.lineOf(old.end-1)
		return splice{old.start, old.end, d.jsonText(v, multi && v.collection(), d.indentOf(old.start))}, nil
	}
	if old.kind == 's' && v.kind == 's' && old.y != nil && !strings.ContainsAny(v.s, "\n\r") {
		// A string replacing a quoted string is quoted the same way.
		if st := old.y.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle); st != 0 {
			cp := *v
			cp.quote = st
			v = &cp
		}
	}
	switch {
	case s.inFlow || old.flow && v.collection():
		text, err := d.yamlFlow(v)
		return splice{old.start, old.end, text}, err
	}
	var after string
	var from int
	var err error
	if s.e != nil {
		from = s.e.colon + 1
		after, err = d.yamlAfterColon(v, d.colOf(s.e.kstart))
	} else {
		from = s.it.dash + 1
		after, err = d.yamlItem(v, d.colOf(s.it.dash))
		after = strings.TrimPrefix(after, "-")
	}
	if err != nil {
		return splice{}, err
	}
	if !strings.Contains(after, "\n") && !old.empty && (old.kind == 's' || old.flow) {
		// Only the value's own bytes: the space after the colon stays.
		return splice{old.start, old.end, strings.TrimPrefix(after, " ")}, nil
	}
	end := old.end
	if head, rest, multi := strings.Cut(after, "\n"); multi {
		// A comment after the old value on its line would end up on the
		// new block's last line, inside a block scalar's text: it goes to
		// the block's first line, after "key:" (or "-") and its indicator.
		lineEnd := d.lineEnd(old.end)
		tail := strings.TrimRight(string(d.src[old.end:lineEnd]), "\r\n")
		if c := strings.TrimLeft(tail, " \t"); strings.HasPrefix(c, "#") {
			after = head + " " + c + "\n" + rest
			end = old.end + len(tail)
		}
	}
	return splice{from, end, after}, nil
}

// lineAfter returns where a new line goes after the text ending at end,
// and the line break to write first when the file's last line has none.
func (d *doc) lineAfter(end int) (int, string) {
	at := d.lineEnd(max(end-1, 0))
	if at == len(d.src) && (at == 0 || d.src[at-1] != '\n') {
		return at, "\n"
	}
	return at, ""
}

// insert adds key: v at the end of map m.
func (d *doc) insert(m *tnode, inFlow bool, key string, v *jval) (splice, error) {
	if m.fixed {
		return splice{}, errLayout
	}
	var kv string
	switch {
	case d.json:
		multi := len(m.entries) > 0 && d.lineOf(m.entries[len(m.entries)-1].kstart) != d.lineOf(m.start)
		ind := ""
		if multi {
			ind = d.indentOf(m.entries[len(m.entries)-1].kstart)
		}
		kv = quoteJSON(key) + ": " + d.jsonText(v, multi && v.collection(), ind)
	case inFlow || m.flow:
		var err error
		if kv, err = d.yamlFlowKey(key, v); err != nil {
			return splice{}, err
		}
	default:
		last := m.entries[len(m.entries)-1]
		col := d.colOf(m.entries[0].kstart)
		kv, err := d.yamlBlockKey(key, v, col)
		if err != nil {
			return splice{}, err
		}
		at, nl := d.lineAfter(max(last.val.end, last.colon+1))
		if nl != "" {
			return splice{at, at, nl + spaces(col) + kv}, nil
		}
		return splice{at, at, spaces(col) + kv + "\n"}, nil
	}
	if len(m.entries) == 0 {
		return splice{m.start + 1, m.start + 1, kv}, nil
	}
	last := m.entries[len(m.entries)-1]
	return d.afterLast(m, last.kstart, last.val.end, kv), nil
}

// afterLast adds text after the last element of a flow collection: on a
// line of its own, indented like the last, when the elements are on lines
// of their own.
func (d *doc) afterLast(c *tnode, lastStart, lastEnd int, text string) splice {
	if d.lineOf(lastStart) != d.lineOf(c.start) {
		return splice{lastEnd, lastEnd, ",\n" + d.indentOf(lastStart) + text}
	}
	return splice{lastEnd, lastEnd, ", " + text}
}

// appendItem adds v at the end of list l, written like its last element.
func (d *doc) appendItem(l *tnode, inFlow bool, v *jval) (splice, error) {
	if l.fixed {
		return splice{}, errLayout
	}
	var text string
	n := len(l.items)
	switch {
	case d.json:
		multi, ind := false, ""
		if n > 0 {
			last := l.items[n-1].val
			multi = d.lineOf(last.start) != d.lineOf(last.end-1)
			if d.lineOf(last.start) != d.lineOf(l.start) {
				ind = d.indentOf(last.start)
			}
		}
		text = d.jsonText(v, multi && v.collection(), ind)
	case inFlow || l.flow:
		var err error
		if text, err = d.yamlFlow(v); err != nil {
			return splice{}, err
		}
	default:
		last := l.items[n-1]
		v.flow = last.val.flow
		col := d.colOf(last.dash)
		item, err := d.yamlItem(v, col)
		if err != nil {
			return splice{}, err
		}
		at, nl := d.lineAfter(max(last.val.end, last.dash+1))
		if nl != "" {
			return splice{at, at, nl + spaces(col) + item}, nil
		}
		return splice{at, at, spaces(col) + item + "\n"}, nil
	}
	if n == 0 {
		return splice{l.start + 1, l.start + 1, text}, nil
	}
	last := l.items[n-1].val
	return d.afterLast(l, last.start, last.end, text), nil
}

// remove takes the value in s, with its key or dash, out of its map or
// list; parent is the slot of that map or list, which becomes {} or []
// when s was its only element.
func (d *doc) remove(s slot, parent slot) (splice, error) {
	p := s.parent
	if p.fixed {
		return splice{}, errLayout
	}
	n := len(p.items)
	if p.kind == 'm' {
		n = len(p.entries)
	}
	if n == 1 {
		empty := &jval{kind: 'o'}
		if p.kind == 'l' {
			empty.kind = 'a'
		}
		return d.replace(parent, empty)
	}
	start, end := s.val().start, s.val().end
	next := func(i int) int { return p.items[i].val.start }
	prevEnd := func(i int) int { return p.items[i].val.end }
	if s.e != nil {
		start, end = s.e.kstart, max(end, s.e.colon+1)
		next = func(i int) int { return p.entries[i].kstart }
		prevEnd = func(i int) int { e := p.entries[i]; return max(e.val.end, e.colon+1) }
	} else if s.it.dash >= 0 {
		start = s.it.dash
		end = max(end, s.it.dash+1)
		next = func(i int) int { return p.items[i].dash }
	}
	last := s.index == n-1
	if !d.json && !s.inFlow && !p.flow {
		if d.atLineStart(start) {
			ls := d.lines[d.lineOf(start)]
			return splice{ls, d.lineEnd(max(end-1, start)), ""}, nil
		}
		if last {
			return splice{}, errLayout
		}
		return splice{start, next(s.index + 1), ""}, nil
	}
	if !last {
		return splice{start, next(s.index + 1), ""}, nil
	}
	return splice{prevEnd(s.index - 1), end, ""}, nil
}

// --- nodes ---

func (d *doc) addNode(id string, raw json.RawMessage) ([]byte, error) {
	v, err := readValue(raw)
	if err != nil {
		return nil, errf(ErrBadOp, "add_node needs the node's fields as a JSON object: %v", err)
	}
	if v.kind != 'o' {
		return nil, errf(ErrBadOp, `add_node needs the node's fields as a JSON object, such as {"id": "fetch", "type": "http"}`)
	}
	switch given := v.get("id"); {
	case given == nil && id == "":
		return nil, errf(ErrBadOp, "add_node needs the new node's id (in node or in the value)")
	case given == nil:
		v.keys, v.vals = append([]string{"id"}, v.keys...), append([]*jval{str(id)}, v.vals...)
	case given.kind != 's' || given.s == "":
		return nil, errf(ErrBadOp, "the new node's id must be a string")
	case id != "" && given.s != id:
		return nil, errf(ErrBadOp, "the op's node %q and the value's id %q differ", id, given.s)
	default:
		id = given.s
	}
	if _, err := d.node(id); err == nil {
		return nil, errf(ErrClash, "a node %q is already in the file; choose another id", id)
	}
	v.first("type")
	v.first("id")
	sp, err := d.addTo("nodes", v)
	if err != nil {
		return nil, err
	}
	return d.write(sp), nil
}

// addTo appends v to the top-level list key, making the list when the
// file has none.
func (d *doc) addTo(key string, v *jval) (splice, error) {
	e := d.root.get(key)
	if e == nil {
		return d.insert(d.root, d.root.flow, key, &jval{kind: 'a', items: []*jval{v}})
	}
	s := slot{e: e, parent: d.root, inFlow: d.root.flow}
	switch {
	case e.val.kind == 'l':
		return d.appendItem(e.val, s.inFlow || e.val.flow, v)
	case e.val.null:
		return d.replace(s, &jval{kind: 'a', items: []*jval{v}})
	}
	return splice{}, errf(ErrBadPath, "%s is not a list; fix it in the text first", key)
}

// An edgeRef is an edge of the file.
type edgeRef struct {
	slot
	from, to, on *tnode
}

func (e edgeRef) text(t *tnode) string {
	if t == nil || t.null {
		return ""
	}
	return t.text
}

// edges returns the edges written in the file, and the slot of the list.
func (d *doc) edges() ([]edgeRef, slot) {
	e := d.root.get("edges")
	if e == nil || e.val.kind != 'l' {
		return nil, slot{}
	}
	l := e.val
	var out []edgeRef
	for i, it := range l.items {
		if it.val.kind != 'm' {
			continue
		}
		r := edgeRef{slot: slot{it: it, parent: l, index: i, inFlow: l.flow}}
		if f := it.val.get("from"); f != nil && f.val.kind == 's' {
			r.from = f.val
		}
		if t := it.val.get("to"); t != nil && t.val.kind == 's' {
			r.to = t.val
		}
		if o := it.val.get("on"); o != nil && o.val.kind == 's' {
			r.on = o.val
		}
		out = append(out, r)
	}
	return out, slot{e: e, parent: d.root, inFlow: d.root.flow}
}

// removeEdges removes, one at a time, the edges match picks.
func (d *doc) removeEdges(match func(edgeRef) bool) (*doc, int, error) {
	removed := 0
	for {
		edges, list := d.edges()
		i := 0
		for i < len(edges) && !match(edges[i]) {
			i++
		}
		if i == len(edges) {
			return d, removed, nil
		}
		sp, err := d.remove(edges[i].slot, list)
		if err != nil {
			return nil, 0, err
		}
		if d, err = d.reparse(d.write(sp)); err != nil {
			return nil, 0, err
		}
		removed++
	}
}

// removeNode removes the node's entry and every edge from or to it.
func (d *doc) removeNode(id string) ([]byte, error) {
	if _, err := d.node(id); err != nil {
		return nil, err
	}
	d, _, err := d.removeEdges(func(e edgeRef) bool { return e.text(e.from) == id || e.text(e.to) == id })
	if err != nil {
		return nil, err
	}
	s, err := d.node(id)
	if err != nil {
		return nil, err
	}
	sp, err := d.remove(s, slot{e: d.root.get("nodes"), parent: d.root, inFlow: d.root.flow})
	if err != nil {
		return nil, err
	}
	return d.write(sp), nil
}

// scalar writes a string as a scalar for the file.
func (d *doc) scalar(s string) (string, error) {
	if d.json {
		return quoteJSON(s), nil
	}
	return d.yamlFlow(str(s))
}

// renameNode changes a node's id and every edge, endloop and reference
// that names it.
func (d *doc) renameNode(id, to string) ([]byte, error) {
	s, err := d.node(id)
	if err != nil {
		return nil, err
	}
	if to == "" {
		return nil, errf(ErrBadOp, "rename_node needs the new id in to")
	}
	if to == id {
		return d.src, nil
	}
	if _, err := d.node(to); err == nil {
		return nil, errf(ErrClash, "a node %q is already in the file; choose another id", to)
	}
	text, err := d.scalar(to)
	if err != nil {
		return nil, err
	}
	var sps []splice
	rename := func(t *tnode) error {
		if t.fixed {
			return errLayout
		}
		sps = append(sps, splice{t.start, t.end, text})
		return nil
	}
	_, idv := idOf(s.val())
	if err := rename(idv); err != nil {
		return nil, err
	}
	edges, _ := d.edges()
	for _, e := range edges {
		for _, t := range []*tnode{e.from, e.to} {
			if e.text(t) == id {
				if err := rename(t); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, it := range d.nodeList().items {
		if t := it.val.get("type"); t == nil || t.val.text != "endloop" {
			continue
		}
		if l := it.val.get("loop"); l != nil && l.val.kind == 's' && l.val.text == id {
			if err := rename(l.val); err != nil {
				return nil, err
			}
		}
	}
	refs, err := d.refSplices(id, to)
	if err != nil {
		return nil, err
	}
	return d.write(append(sps, refs...)...), nil
}

// duplicate copies a node's text, comments inside it included, under a
// new id, right after it. The copy has no edges.
func (d *doc) duplicate(id, to string) ([]byte, error) {
	s, err := d.node(id)
	if err != nil {
		return nil, err
	}
	if to == "" {
		return nil, errf(ErrBadOp, "duplicate needs the copy's id in to")
	}
	if _, err := d.node(to); err == nil {
		return nil, errf(ErrClash, "a node %q is already in the file; choose another id", to)
	}
	text, err := d.scalar(to)
	if err != nil {
		return nil, err
	}
	_, idv := idOf(s.val())
	if idv.fixed || s.val().fixed {
		return nil, errLayout
	}
	v, l := s.val(), s.parent
	if !d.json && !s.inFlow && d.atLineStart(s.it.dash) {
		// A block list: copy the element's lines.
		from, end := d.lines[d.lineOf(s.it.dash)], d.lineEnd(v.end-1)
		cp := string(d.src[from:idv.start]) + text + string(d.src[idv.end:end])
		if !strings.HasSuffix(cp, "\n") {
			cp = "\n" + cp
			return d.write(splice{end, end, cp}), nil
		}
		return d.write(splice{end, end, cp}), nil
	}
	if !d.json && !s.inFlow {
		return nil, errLayout
	}
	cp := string(d.src[v.start:idv.start]) + text + string(d.src[idv.end:v.end])
	sep := ", "
	switch i := s.index; {
	case i+1 < len(l.items):
		sep = string(d.src[v.end:l.items[i+1].val.start])
	case i > 0:
		sep = string(d.src[l.items[i-1].val.end:v.start])
	}
	return d.write(splice{v.end, v.end, sep + cp}), nil
}

// --- edges ---

func (d *doc) connect(from, to, handle string) ([]byte, error) {
	if to == "" {
		return nil, errf(ErrBadOp, "connect needs the target node in to")
	}
	for _, id := range []string{from, to} {
		if _, err := d.node(id); err != nil {
			return nil, err
		}
	}
	edges, _ := d.edges()
	for _, e := range edges {
		if e.text(e.from) == from && e.text(e.to) == to && e.text(e.on) == handle {
			return nil, errf(ErrClash, "an edge from %q to %q%s is already in the file", from, to, onText(handle))
		}
	}
	edge := &jval{kind: 'o', flow: true, keys: []string{"from", "to"}, vals: []*jval{str(from), str(to)}}
	if handle != "" {
		edge.keys, edge.vals = append(edge.keys, "on"), append(edge.vals, str(handle))
	}
	sp, err := d.addTo("edges", edge)
	if err != nil {
		return nil, err
	}
	return d.write(sp), nil
}

func onText(handle string) string {
	if handle == "" {
		return ""
	}
	return fmt.Sprintf(" (handle %q)", handle)
}

// disconnect removes the edges from → to that leave by handle ("" is the
// default handle: an edge with no on).
func (d *doc) disconnect(from, to, handle string) ([]byte, error) {
	if _, err := d.node(from); err != nil {
		return nil, err
	}
	nd, n, err := d.removeEdges(func(e edgeRef) bool {
		return e.text(e.from) == from && e.text(e.to) == to && e.text(e.on) == handle
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		edges, _ := d.edges()
		var out []string
		for _, e := range edges {
			if e.text(e.from) == from {
				out = append(out, e.text(e.to)+onText(e.text(e.on)))
			}
		}
		return nil, errf(ErrUnknownEdge, "no edge from %q to %q%s%s", from, to, onText(handle), listOf("its edges go to", out))
	}
	return nd.src, nil
}
