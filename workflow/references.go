package workflow

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/node"
)

// Names under the expression roots that are known before the run.
var (
	executionKeys = []string{"id", "workflow", "started_at"}
	loopKeys      = []string{"item", "index", "total", "iteration"}
	alwaysPorts   = []string{"success", "error"}
)

// refSite is where an expression was written.
type refSite struct {
	user      int  // index of the node that evaluates it; -1 for run outputs and config
	allowSelf bool // checks may look at their own node
	pos       Pos
	// raw is the string being checked, when known, and base the offset in
	// it of the expression at hand: diagnostics point at the reference.
	raw     *value
	base    int
	path    string
	nodeID  string
	nodesOK bool // node outputs are in scope
	// roots, when set, are the only names the site's scope holds (a
	// server's or model's settings, a delivery's URL) besides the node
	// outputs nodesOK lets it read: the others render as null there. why
	// says why, when the names do not.
	roots []string
	why   string
}

// The scopes of the templates outside nodes: an MCP server's settings
// are rendered with the run's inputs and secrets (mcp.Scope), a model's
// with its secrets (secrets.Renderer), a delivery's URL and secret with
// inputs, secrets, execution and trigger (delivery.renderTarget).
var (
	serverRoots   = []string{"inputs", "secrets"}
	modelRoots    = []string{"secrets"}
	deliveryRoots = []string{"inputs", "secrets", "execution", "trigger"}
	// CheckRoots are what an expr check reads besides the nodes' outputs
	// (package check): it is evaluated once the run ended, when its
	// variables and messages are gone.
	CheckRoots = []string{"inputs", "trigger", "secrets", "execution"}
)

// checkWhy is why an expr check reads no more than CheckRoots.
const checkWhy = "; a check is evaluated once the run ended, on each node's latest output, when the run's variables, messages and loops are gone: to check a variable, have a node output it (a set node's values)"

// references compiles every template and expression and checks what it
// refers to.
func (v *validator) references() {
	w := v.w
	v.stamp = make([]int32, len(w.Nodes))
	for i, n := range w.Nodes {
		if spec := v.specs[i]; spec != nil {
			v.own(i, func() { v.nodeReferences(i, n, spec) })
		}
	}
	for _, o := range w.Outputs {
		if raw, ok := w.outputRaw(o.Name); ok {
			v.templates(raw, refSite{user: -1, pos: o.Pos, path: "outputs." + o.Name, nodesOK: true})
		}
	}
	for _, s := range w.MCPServers {
		for k, val := range s.Env {
			v.templateString(val, refSite{user: -1, pos: s.Pos, path: "mcp_servers." + s.Name + ".env." + k, roots: serverRoots})
		}
		for k, val := range s.Headers {
			v.templateString(val, refSite{user: -1, pos: s.Pos, path: "mcp_servers." + s.Name + ".headers." + k, roots: serverRoots})
		}
		for i, a := range s.Args {
			v.templateString(a, refSite{user: -1, pos: s.Pos, path: fmt.Sprintf("mcp_servers.%s.args[%d]", s.Name, i), roots: serverRoots})
		}
	}
	for _, l := range w.LLM {
		for _, f := range []struct{ key, val string }{{"model", l.Model}, {"base_url", l.BaseURL}, {"api_key", l.APIKey}} {
			v.templateString(f.val, refSite{user: -1, pos: l.Pos, path: "llm." + l.Name + "." + f.key, roots: modelRoots})
		}
	}
	v.deliveryRefs()
}

// nodeReferences checks the templates and expressions of node i's
// parameters and checks.
func (v *validator) nodeReferences(i int, n *Node, spec *node.Spec) {
	site := refSite{user: i, pos: n.Pos, nodeID: n.ID, nodesOK: true}
	for _, p := range spec.Params {
		raw := n.rawAt(p.Name)
		if raw == nil {
			continue
		}
		s := site
		s.path = p.Name
		if p.Expr {
			if raw.kind == vString {
				s.pos, s.raw = raw.pos, raw
				v.expression(raw.s, s)
			}
			continue
		}
		if p.Type == node.List && len(p.Items) > 0 && raw.kind == vList {
			for j, item := range raw.list {
				for _, e := range item.keys {
					ip := paramItem(p, e.key)
					s.path = fmt.Sprintf("%s[%d].%s", p.Name, j, e.key)
					if ip.Expr && e.val.kind == vString {
						s.pos, s.raw = e.val.pos, e.val
						v.expression(e.val.s, s)
					} else if !ip.NoTemplate {
						v.templates(e.val, s)
					}
				}
			}
			continue
		}
		if !p.NoTemplate {
			v.templates(raw, s)
		}
	}
	named := map[string]bool{}
	for ci, c := range n.Checks {
		path := fmt.Sprintf("%s.checks[%d]", nodePath(i), ci)
		if named[c.Name] {
			v.d.errorf(c.Pos, path+".name", n.ID, "node %q has two checks named %q: a verdict names its check (node › check), so give each its own name", n.ID, c.Name)
		}
		named[c.Name] = true
		if c.Type == "expr" && c.Expr != "" {
			v.expression(c.Expr, refSite{user: i, allowSelf: true, pos: c.Pos, nodeID: n.ID, path: fmt.Sprintf("checks[%d].expr", ci), nodesOK: true,
				roots: CheckRoots, why: checkWhy})
		}
		v.checkReads(i, n, spec, c, path)
	}
}

// checkReads refuses a check that reads a field of the node's output the
// node's kind does not declare (an http_status check reads status, one
// with a target its first part): it could never pass.
func (v *validator) checkReads(i int, n *Node, spec *node.Spec, c *Check, path string) {
	var field, what string
	switch {
	case c.Type == "http_status":
		field, what = "status", "an http_status check reads the output's status"
	case c.Params["target"] != nil:
		t, ok := c.Params["target"].(string)
		if !ok || strings.Contains(t, "{{") {
			return // the check says what is wrong with it when it runs
		}
		field, _, _ = strings.Cut(t, ".")
		what, path = fmt.Sprintf("the check's target %s reads the output's %s", t, field), path+".target"
	default:
		return
	}
	ports := v.ports(i, spec)
	if field == "" || contains(alwaysPorts, field) || ports.list == nil || ports.has[field] || ports.has["node_outputs"] {
		return
	}
	all := append(append([]string(nil), ports.list...), alwaysPorts...)
	v.d.errorf(c.Pos, path, n.ID, "check %q can never pass: %s, and node %q (%s) has no output %q%s (its outputs: %s)",
		c.Name, what, n.ID, n.Type, field, didYouMean(field, all), strings.Join(all, ", "))
}

// diagPath is the site's path from the top of the file, for diagnostics.
func (s refSite) diagPath() string {
	if s.user >= 0 {
		return fmt.Sprintf("nodes[%d].%s", s.user, s.path)
	}
	return s.path
}

func paramItem(p node.Param, name string) node.Param {
	for _, ip := range p.Items {
		if ip.Name == name {
			return ip
		}
	}
	return node.Param{Name: name, Type: node.Any}
}

func (w *Workflow) outputRaw(name string) (*value, bool) {
	for _, o := range w.Outputs {
		if o.Name == name && o.raw != nil {
			return o.raw, true
		}
	}
	return nil, false
}

// templates walks a parsed value and checks every template string in it.
func (v *validator) templates(val *value, site refSite) {
	switch val.kind {
	case vString:
		site.pos = val.pos
		site.raw = val
		v.templateString(val.s, site)
	case vList:
		for i, e := range val.list {
			if !hasTemplates(e) {
				continue
			}
			s := site
			s.path = fmt.Sprintf("%s[%d]", site.path, i)
			v.templates(e, s)
		}
	case vMap:
		for _, e := range val.keys {
			if !hasTemplates(e.val) {
				continue
			}
			s := site
			s.path = joinPath(site.path, e.key)
			v.templates(e.val, s)
		}
	}
}

// hasTemplates reports whether a value holds a string with "{{" anywhere,
// so paths are built only for values that need checking.
func hasTemplates(val *value) bool {
	switch val.kind {
	case vString:
		return expr.HasTemplate(val.s)
	case vList:
		for _, e := range val.list {
			if hasTemplates(e) {
				return true
			}
		}
	case vMap:
		for _, e := range val.keys {
			if hasTemplates(e.val) {
				return true
			}
		}
	}
	return false
}

func (v *validator) templateString(s string, site refSite) {
	if !expr.HasTemplate(s) {
		return
	}
	t, err := expr.ParseTemplate(s)
	if err != nil {
		v.d.errorf(site.pos, site.diagPath(), site.nodeID, "%s does not parse: %v", site.path, err)
		return
	}
	for _, seg := range t.Segments() {
		site.base = seg.Offset
		v.refs(seg.Code, site)
	}
}

// at is the position of byte off of the site's current expression.
func (s refSite) at(off int) Pos {
	if s.raw == nil {
		return s.pos
	}
	return s.raw.posAt(s.base + off)
}

func (v *validator) expression(code string, site refSite) {
	if i := strings.Index(code, "{{"); i >= 0 {
		if _, _, err := expr.Inspect(code); err != nil {
			v.templateInExpression(code, i, site)
			return
		}
	}
	v.refs(code, site)
}

// templateInExpression explains a {{ }} written in an expression field
// (condition, exit, expr), which is evaluated as it is written: a
// template's braces do not parse there. When the field is one {{ }}, the
// expression inside is checked as the fix would have it.
func (v *validator) templateInExpression(code string, at int, site refSite) {
	name := site.path
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	// Blanks around the one {{ }} (a YAML block scalar's newline) do not
	// change what the fix is.
	lead := len(code) - len(strings.TrimLeftFunc(code, unicode.IsSpace))
	if t, err := expr.ParseTemplate(strings.TrimSpace(code)); err == nil && t.Single() {
		segs := t.Segments()
		inner := strings.TrimSpace(segs[0].Code)
		v.d.errorf(site.at(at), site.diagPath(), site.nodeID,
			"%s is an expression, not a template: it is evaluated as written, without {{ }}; write %s: %q", site.path, name, inner)
		site.base += lead + segs[0].Offset
		v.refs(segs[0].Code, site)
		return
	}
	v.d.errorf(site.at(at), site.diagPath(), site.nodeID,
		"%s is an expression, not a template: it is evaluated as written, so {{ }} does not belong in it; remove the braces and write the expression itself (e.g. %s: \"inputs.amount > 10\"), quoting text as \"...\"", site.path, name)
}

func (v *validator) refs(code string, site refSite) {
	refs, warnings, err := expr.Inspect(code)
	if err != nil {
		pos := site.pos
		var xe *expr.Error
		if errors.As(err, &xe) && xe.Offset >= 0 {
			pos = site.at(xe.Offset)
		}
		if !errors.Is(err, expr.ErrCall) {
			v.d.errorf(pos, site.diagPath(), site.nodeID, "%s does not parse: %v", site.path, err)
			return
		}
		v.d.errorf(pos, site.diagPath(), site.nodeID, "%s would fail when it is evaluated: %v", site.path, err)
	}
	for _, r := range refs {
		v.ref(r, site)
	}
	for _, wn := range warnings {
		v.d.warnf(site.at(wn.Offset), site.diagPath(), site.nodeID, "%s %s", site.path, wn.Msg)
	}
}

// refText renders a reference as written: the root and its first member.
func refText(r expr.Ref) string {
	if len(r.Path) == 0 {
		return r.Root
	}
	return r.Root + "." + r.Path[0]
}

func (v *validator) ref(r expr.Ref, site refSite) {
	w := v.w
	first := ""
	if len(r.Path) > 0 {
		first = r.Path[0]
	}
	// Every message names the field and the reference it reads, then the
	// problem and what to do.
	errf := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		v.d.errorf(site.at(r.Offset), site.diagPath(), site.nodeID, "%s reads %s, but %s", site.path, refText(r), msg)
	}
	if site.roots != nil && !contains(site.roots, r.Root) && (!site.nodesOK || contains(expr.ScopeRoots, r.Root)) {
		names := site.roots[0]
		if n := len(site.roots); n > 1 {
			names = strings.Join(site.roots[:n-1], ", ") + " and " + site.roots[n-1]
		}
		if site.nodesOK {
			names = "node outputs, " + names
		}
		errf("only %s can be read here, not %q%s", names, r.Root, site.why)
		return
	}
	switch r.Root {
	case "inputs":
		if first != "" && w.Input(first) == nil {
			var names []string
			for _, in := range w.Inputs {
				names = append(names, in.Name)
			}
			errf("no input %q is declared%s (declare it under inputs:)", first, didYouMean(first, names))
		}
		return
	case "secrets":
		if first != "" && !contains(w.Secrets, first) {
			errf("secret %q is not declared%s (add it to secrets:)", first, didYouMean(first, w.Secrets))
		}
		return
	case "execution":
		if first != "" && !contains(executionKeys, first) {
			errf("execution has no field %q%s (fields: %s)", first, didYouMean(first, executionKeys), strings.Join(executionKeys, ", "))
		}
		return
	case "loop":
		if first != "" && !contains(loopKeys, first) {
			errf("loop has no field %q%s (fields: %s)", first, didYouMean(first, loopKeys), strings.Join(loopKeys, ", "))
		} else if u := site.user; u >= 0 && !v.w.isLoop(v.g.Nodes[u]) && (v.home == nil || v.home[u] < 0) {
			v.d.warnf(site.at(r.Offset), site.diagPath(), site.nodeID, "%s reads %s, but node %q is in no loop or foreach body, where loop is null; read it in a body node",
				site.path, refText(r), w.Nodes[u].ID)
		}
		return
	case "trigger", "vars", "messages":
		return
	}
	idx, isNode := v.g.Index[r.Root]
	if !site.nodesOK {
		errf("only inputs and secrets can be read here, not %q", r.Root)
		return
	}
	if !isNode {
		cands := append(append([]string(nil), v.ids...), expr.ScopeRoots...)
		hint := didYouMean(r.Root, cands)
		switch {
		case hint == "" && r.Path == nil && expr.IsBuiltin(r.Root) && !expr.IsKeyword(r.Root):
			hint = fmt.Sprintf("; %s is a function: call it, %s(…)", r.Root, r.Root)
		case hint == "":
			hint = " (a reference starts with a node id or one of " + strings.Join(expr.ScopeRoots, ", ") + ")"
		}
		errf("there is no node %q%s", r.Root, hint)
		return
	}
	if site.user >= 0 {
		if idx == site.user {
			if !site.allowSelf && !v.onCycle(idx) {
				errf("that is the node's own output, which does not exist before it runs")
				return
			}
		} else if !v.upstream(idx, site.user) {
			errf("node %q is not upstream of %q, so its output is not there yet; add an edge path from %s to %s", r.Root, w.Nodes[site.user].ID, r.Root, w.Nodes[site.user].ID)
			return
		}
	}
	// confidence is there when the node reported one (_confidence).
	if first == "" || contains(alwaysPorts, first) || first == "confidence" {
		return
	}
	spec := v.specs[idx]
	if spec == nil {
		return
	}
	ports := v.ports(idx, spec)
	// A legacy node_outputs result is merged into the output: its keys
	// are not known before the run.
	if ports.list == nil || ports.has[first] || ports.has["node_outputs"] {
		return
	}
	all := append(append([]string(nil), ports.list...), alwaysPorts...)
	hint := ""
	if loop, ok := w.Nodes[idx].Params["loop"].(string); ok && spec.Role == node.RoleLoopEnd {
		hint = fmt.Sprintf("; what the body made is the output of its loop: read %s.%s", loop, first)
	}
	if vars, ok := w.Nodes[idx].Params["vars"].(map[string]any); ok && w.Nodes[idx].Type == "set" {
		if _, ok := vars[first]; ok {
			hint = fmt.Sprintf("; %s is a variable it sets: read vars.%s", first, first)
		}
	}
	errf("node %q (%s) has no output %q%s (its outputs: %s)%s", r.Root, w.Nodes[idx].Type, first, didYouMean(first, all), strings.Join(all, ", "), hint)
}

// declaredPorts are the output ports of a node known before the run.
type declaredPorts struct {
	list []string // nil when they are not known before the run
	has  map[string]bool
}

// ports returns node idx's declared output ports, worked out once per
// node: a set node's ports are the keys of its values, and every reference
// to the node looks one up.
func (v *validator) ports(idx int, spec *node.Spec) *declaredPorts {
	if v.portsOf == nil {
		v.portsOf = make([]*declaredPorts, len(v.w.Nodes))
	}
	if p := v.portsOf[idx]; p != nil {
		return p
	}
	list := spec.DeclaredOutputs(v.w.Nodes[idx].Params)
	p := &declaredPorts{list: list, has: make(map[string]bool, len(list))}
	for _, name := range list {
		p.has[name] = true
	}
	v.portsOf[idx] = p
	return p
}

func (v *validator) onCycle(i int) bool {
	for j := range v.comp {
		if j != i && v.comp[j] == v.comp[i] {
			return true
		}
	}
	for _, ei := range v.g.Out[i] {
		if v.g.Edges[ei].To == i {
			return true
		}
	}
	return false
}

// upstream reports whether a can reach b. Components are numbered in
// reverse topological order, so a reaches b only when comp[a] >= comp[b];
// the backward search from b prunes every node that comes before a.
func (v *validator) upstream(a, b int) bool {
	ca, cb := v.comp[a], v.comp[b]
	if ca == cb {
		return true
	}
	if ca < cb {
		return false
	}
	v.epoch++
	stack := []int{b}
	v.stamp[b] = v.epoch
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, ei := range v.g.In[x] {
			y := v.g.Edges[ei].From
			if y == a {
				return true
			}
			if v.stamp[y] == v.epoch || v.comp[y] > ca {
				continue
			}
			v.stamp[y] = v.epoch
			stack = append(stack, y)
		}
	}
	return false
}
