package workflow

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/node"
)

// nameRe and queuePattern are compiled on first use, so that a command
// that validates nothing does not pay for them.
var nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`) })

// MaxIDLen is the longest node id.
const MaxIDLen = 64

// ValidID reports whether s may name a node: [a-z_][a-z0-9_]*, at most 64
// characters. Ids name folders on disk and variables in expressions, so
// nothing else is accepted.
func ValidID(s string) bool {
	if s == "" || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || (c >= 'a' && c <= 'z'):
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Load reads, decodes and validates a workflow file against the kinds of
// reg (nil: node.Default, the built-in kinds and those registered into it).
func Load(path string, reg *node.Registry) (*Workflow, Diagnostics) {
	src, err := ReadFile(path)
	if err != nil {
		return nil, Diagnostics{{File: path, Severity: Error, Message: err.Error()}}
	}
	return LoadSource(path, src, reg)
}

// LoadSource decodes and validates the text of a workflow file as Load does,
// without reading it: src is taken as the text of the file at path (not
// read, and need not exist), whose folder the files it names (a
// subworkflow, a prompt file) are taken from. An editor checks a draft
// with it before the draft is saved.
func LoadSource(path string, src []byte, reg *node.Registry) (*Workflow, Diagnostics) {
	w, ds := Decode(path, src)
	if w == nil {
		return nil, ds
	}
	refused := map[string]bool{}
	for _, d := range ds {
		if d.Severity == Error && d.Path != "" {
			refused[d.Path] = true
		}
	}
	for _, d := range Validate(w, reg) {
		// A value decoding refused was replaced by its zero value; do not
		// report that zero again.
		if d.Severity == Error && refused[d.Path] {
			continue
		}
		ds = append(ds, d)
	}
	ds.Sort()
	return w, ds
}

// Validate checks a decoded workflow against the node kinds in reg (nil:
// node.Default) and returns every problem at once.
func Validate(w *Workflow, reg *node.Registry) Diagnostics {
	if reg == nil {
		reg = node.Default
	}
	return validate(w, reg, nil, map[string]Diagnostics{})
}

// ValidateOwn is Validate without reading the child workflows w's nodes
// run: what a process that runs a stored version checks, whose child
// files are read, and checked, when each node starts its child (they may
// have changed since the run started).
func ValidateOwn(w *Workflow, reg *node.Registry) Diagnostics {
	if reg == nil {
		reg = node.Default
	}
	return validate(w, reg, nil, nil)
}

// validate validates w, run as a child by the workflows of chain
// (absolute paths, outermost first). children holds the problems of the
// child workflows validated so far, by depth and absolute path, so a
// child run by many nodes is read once; nil, the children are not read.
func validate(w *Workflow, reg *node.Registry, chain []string, children map[string]Diagnostics) Diagnostics {
	w.kinds = reg
	v := &validator{w: w, reg: reg, d: &diags{file: w.File}, owner: map[int]int{}, children: children}
	if w.File != "" {
		v.chain = append(slices.Clip(chain), absPath(w.File))
	}
	v.run()
	w.ignored = v.ignored
	return v.d.list
}

// absPath is path made absolute, symlinks resolved: the one name of a
// file however it is reached.
func absPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

type validator struct {
	w     *Workflow
	reg   *node.Registry
	d     *diags
	specs []*node.Spec // by node index; nil when the type is unknown
	g     *Graph
	ids   []string
	comp  []int // SCC of each node over every edge
	stamp []int32
	epoch int32
	// portsOf caches each node's declared output ports (see ports).
	portsOf []*declaredPorts

	// brokenEdges is set when an edge names a node that does not exist.
	brokenEdges bool
	// owner maps a diagnostic's index to the node whose own parameters,
	// expressions or references it is about: a problem that does not
	// matter when that node never runs (see ignoreIdle).
	owner map[int]int
	// ignored are the errors ignoreIdle turned into warnings.
	ignored Diagnostics
	// chain is the workflow's file and those that run it as a child,
	// outermost first (absolute paths); children is validate's.
	chain    []string
	children map[string]Diagnostics
	// childOf holds, by node id, the valid child workflow a subworkflow
	// node runs, when its file was read.
	childOf map[string]*Workflow
	// home is the loop or foreach whose body holds each node, -1 for
	// none; nil when the workflow has no loop (loopBodies).
	home []int
}

// own runs check and records the diagnostics it adds as problems of node
// i's own settings.
func (v *validator) own(i int, check func()) {
	from := len(v.d.list)
	check()
	for j := from; j < len(v.d.list); j++ {
		v.owner[j] = i
	}
}

func (v *validator) run() {
	w := v.w
	if _, ok := w.pos["version"]; !ok {
		v.d.errorf(Pos{1, 1}, "version", "", "the workflow has no version; add `version: 1` at the top")
	} else if w.Version != 1 {
		v.d.errorf(w.pos["version"], "version", "", "version %d is not supported; this Skein reads version 1", w.Version)
	}
	if _, ok := w.pos["name"]; !ok {
		v.d.errorf(Pos{1, 1}, "name", "", "the workflow has no name; add e.g. `name: %s`", suggestName(w.File))
	} else if !nameRe().MatchString(w.Name) {
		v.d.errorf(w.pos["name"], "name", "", "workflow name %q must match [a-z0-9][a-z0-9_-]* (e.g. %q)", w.Name, suggestName(w.Name))
	}
	if len(w.Nodes) == 0 {
		p := w.pos["nodes"]
		if p.Line == 0 {
			p = Pos{1, 1}
		}
		v.d.errorf(p, "nodes", "", "the workflow has no nodes; add a `nodes:` list")
	}
	v.inputsAndSecrets()
	v.files()
	if _, ok := w.pos["defaults"]; ok {
		v.bounded(w.pos["defaults"], "defaults.max_visits", "", "defaults: max_visits", w.Defaults.MaxVisits, 1, MaxVisitLimit)
	}
	v.nodes()
	v.g = w.Graph()
	v.edges()
	v.loops()
	v.loopBodies()
	v.servers() // reads the child workflows, which cycles asks about
	v.cycles()
	v.reachability()
	v.references()
	v.ignoreIdle()
}

func suggestName(s string) string {
	s = strings.TrimSuffix(filepath.Base(s), filepath.Ext(s))
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	out := strings.TrimLeft(b.String(), "-_")
	if out == "" {
		return "my-workflow"
	}
	return out
}

func (v *validator) inputsAndSecrets() {
	seen := map[string]bool{}
	for _, in := range v.w.Inputs {
		if !ValidID(in.Name) {
			v.d.errorf(in.Pos, "inputs."+in.Name, "", "input name %q must match [a-z_][a-z0-9_]* (e.g. %q): inputs are read as inputs.<name>", in.Name, suggestID(in.Name))
		}
		typed := in.Default == nil || valueHasType(in.Default, in.Type)
		if !typed {
			fix := "change the default or the type"
			if in.Type == "boolean" {
				if said, ok := textForBool(in.Default); ok {
					fix = said
				}
			}
			v.d.errorf(in.Pos, "inputs."+in.Name+".default", "", "the default of input %q is %s, which is not of its type %s; %s", in.Name, describePlain(in.Default), in.Type, fix)
		}
		for _, e := range in.Enum {
			if !valueHasType(e, in.Type) {
				v.d.errorf(in.Pos, "inputs."+in.Name+".enum", "", "the enum of input %q holds %s, which is not of its type %s; no run could give it", in.Name, describePlain(e), in.Type)
			}
		}
		if typed && in.Default != nil && len(in.Enum) > 0 && !inEnum(in.Default, in.Enum) {
			v.d.errorf(in.Pos, "inputs."+in.Name+".default", "", "the default of input %q, %s, is not one of its enum values %v; add it to enum or change the default", in.Name, describePlain(in.Default), in.Enum)
		}
		if in.Required && in.Default != nil {
			v.d.warnf(in.Pos, "inputs."+in.Name, "", "input %q is required and has a default, so it is never missing; drop required: true, or the default", in.Name)
		}
		seen[in.Name] = true
	}
	p := v.w.pos["secrets"]
	dup := map[string]bool{}
	for _, s := range v.w.Secrets {
		if s == "" || strings.ContainsAny(s, " .{}") {
			v.d.errorf(p, "secrets", "", "secret name %q must be a plain name such as API_KEY", s)
		}
		if dup[s] {
			v.d.errorf(p, "secrets", "", "secret %q is declared twice", s)
		}
		dup[s] = true
	}
}

// files checks the folders of files: — each must exist and be a folder. A
// relative path is relative to the workflow's folder, so with no file name
// only absolute ones are checked.
func (v *validator) files() {
	seen := map[string]bool{}
	for i, f := range v.w.Files {
		path := fmt.Sprintf("files[%d]", i)
		switch {
		case strings.TrimSpace(f.Path) == "":
			v.d.errorf(f.Pos, path, "", "files[%d] is empty; give a folder path such as ./assets", i)
			continue
		case strings.Contains(f.Path, "{{"):
			v.d.errorf(f.Pos, path, "", "folder %q of files: is a template; folders are checked before the run, so write the path itself", f.Path)
			continue
		case !filepath.IsAbs(f.Path) && v.w.File == "":
			continue
		}
		if abs := v.w.resolve(f.Path); seen[abs] {
			v.d.warnf(f.Pos, path, "", "folder %q is declared twice in files:", f.Path)
		} else {
			seen[abs] = true
		}
		full := f.Path // as the user would find it from here
		if !filepath.IsAbs(full) {
			full = filepath.Join(filepath.Dir(v.w.File), full)
		}
		fi, err := os.Stat(full)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			v.d.errorf(f.Pos, path, "", "folder %q of files: does not exist (looked for %s); create it or fix the path (relative paths are relative to the workflow file's folder)", f.Path, full)
		case err != nil:
			v.d.errorf(f.Pos, path, "", "folder %q of files: cannot be read: %v", f.Path, unwrapPathErr(err))
		case !fi.IsDir():
			v.d.errorf(f.Pos, path, "", "%q in files: is not a folder (%s); declare the folder that holds the files", f.Path, full)
		case filepath.Dir(full) == full:
			v.d.warnf(f.Pos, path, "", "files: %q lets nodes send any file of this machine to a model; declare the folders they need", f.Path)
		}
	}
}

// unwrapPathErr drops the path a *fs.PathError repeats.
func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// bounded reports an integer outside lo..hi. Every bounded number of a
// workflow (max_visits, max_iterations, …) is checked here, so the messages
// agree.
func (v *validator) bounded(pos Pos, path, nodeID, name string, n, lo, hi int) {
	if n < lo || n > hi {
		v.d.errorf(pos, path, nodeID, "%s must be between %s and %s, not %d", name, groupDigits(lo), groupDigits(hi), n)
	}
}

// groupDigits writes n with thousands separators: 1,000,000.
func groupDigits(n int) string {
	if n < 0 {
		return "-" + groupDigits(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// valueHasType reports whether a plain value fits an input or parameter
// type.
func valueHasType(val any, typ string) bool {
	switch typ {
	case "string":
		_, ok := val.(string)
		return ok
	case "integer":
		_, ok := val.(int)
		if f, isF := val.(float64); isF && f == float64(int64(f)) {
			return true
		}
		return ok
	case "number":
		switch val.(type) {
		case int, float64:
			return true
		}
		return false
	case "boolean":
		_, ok := val.(bool)
		return ok
	case "list", "strings":
		_, ok := val.([]any)
		return ok
	case "map":
		_, ok := val.(map[string]any)
		return ok
	}
	return true
}

func (v *validator) nodes() {
	w := v.w
	v.specs = make([]*node.Spec, len(w.Nodes))
	v.ids = make([]string, 0, len(w.Nodes))
	first := make(map[string]*Node, len(w.Nodes))
	kinds := v.reg.Kinds()
	for i, n := range w.Nodes {
		idPos := n.ParamPosOf("id")
		switch {
		case n.ID == "":
			if n.raw == nil { // a decoded file's node is told of by Decode
				v.d.errorf(n.Pos, nodePath(i)+".id", "", "node %d has no id: give it one (e.g. fetch_%d)", i, i)
			}
		case !ValidID(n.ID):
			v.d.errorf(idPos, nodePath(i)+".id", n.ID, "node id %q is not an identifier: use lower-case letters, digits and _, starting with a letter or _, at most %d characters (e.g. %q)", n.ID, MaxIDLen, suggestID(n.ID))
		case contains(expr.ScopeRoots, n.ID):
			v.d.errorf(idPos, nodePath(i)+".id", n.ID, "node id %q is reserved for the expression scope; pick another id", n.ID)
		case expr.IsKeyword(n.ID):
			// Built-in function names are fine (the node shadows the
			// function); a keyword cannot be read at all.
			v.d.errorf(idPos, nodePath(i)+".id", n.ID, "node id %q is an expression keyword, so {{ %s.x }} could not read it; pick another id such as %q", n.ID, n.ID, n.ID+"_step")
		}
		if prev, dup := first[n.ID]; dup && n.ID != "" {
			v.d.errorf(idPos, nodePath(i)+".id", n.ID, "duplicate node id %q (first used at line %d); node ids must be unique, so rename one of them", n.ID, prev.Pos.Line)
		} else if n.ID != "" {
			first[n.ID] = n
			v.ids = append(v.ids, n.ID)
		}
		if n.Queue != "" && (len(n.Queue) > 128 || !queuePattern().MatchString(n.Queue)) {
			v.d.errorf(n.ParamPosOf("queue"), nodePath(i)+".queue", n.ID, "queue %q is not a queue name: lower-case letters and digits, in words joined by _ or -, at most 128 characters (e.g. gpu)", n.Queue)
		}
		if n.MaxVisits != nil {
			v.bounded(n.ParamPosOf("max_visits"), nodePath(i)+".max_visits", n.ID, "max_visits", *n.MaxVisits, 1, MaxVisitLimit)
		}
		if n.Type == "" {
			continue
		}
		spec, ok := v.reg.Lookup(n.Type)
		if !ok {
			v.d.errorf(n.ParamPosOf("type"), nodePath(i)+".type", n.ID, "unknown node type %q%s", n.Type, typeHint(n.Type, kinds))
			continue
		}
		v.specs[i] = spec
		v.own(i, func() { v.params(n, spec, i) })
	}
}

// typeHint suggests a node type close to typ. When the type has a known
// prefix (trigger.x) it lists that family, since edit distance alone would
// offer trigger.chat for trigger.cron; with no close type it lists them all.
func typeHint(typ string, kinds []string) string {
	hint := didYouMean(typ, kinds)
	if prefix, _, ok := strings.Cut(typ, "."); ok {
		var family []string
		for _, k := range kinds {
			if strings.HasPrefix(k, prefix+".") {
				family = append(family, k)
			}
		}
		if len(family) > 0 {
			return hint + " (" + prefix + " types: " + strings.Join(family, ", ") + ")"
		}
	}
	if hint == "" {
		hint = " (node types: " + strings.Join(kinds, ", ") + ")"
	}
	return hint
}

func suggestID(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	out := b.String()
	if out == "" || (out[0] >= '0' && out[0] <= '9') {
		out = "n_" + out
	}
	if len(out) > MaxIDLen {
		out = out[:MaxIDLen]
	}
	return out
}

// ParamPosOf returns the position of any key's value of the node as
// written, params or common fields.
func (n *Node) ParamPosOf(key string) Pos {
	if n.raw != nil {
		if i := n.raw.find(key); i >= 0 {
			return n.raw.keys[i].val.pos
		}
	}
	return n.Pos
}

func (n *Node) keyPos(key string) Pos {
	if n.raw != nil {
		if i := n.raw.find(key); i >= 0 {
			return n.raw.keys[i].keyPos
		}
	}
	return n.Pos
}

// edgeKeyHint is the message for a node key other workflow tools order
// steps with (depends, needs, next): Skein orders them by edges, and the
// message writes the edges the key meant.
func edgeKeyHint(n *Node, key string, val any) (string, bool) {
	var before bool
	switch key {
	case "depends", "depends_on", "dependencies", "needs", "after", "requires", "run_after":
		before = true
	case "next", "then", "on_success", "before":
	default:
		return "", false
	}
	var names []string
	switch x := val.(type) {
	case string:
		names = []string{x}
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				names = append(names, s)
			}
		}
	}
	if len(names) == 0 {
		names = []string{"other"}
	}
	edges := make([]string, len(names))
	for i, m := range names {
		if before {
			edges[i] = fmt.Sprintf("`- {from: %s, to: %s}`", m, n.ID)
		} else {
			edges[i] = fmt.Sprintf("`- {from: %s, to: %s}`", n.ID, m)
		}
	}
	return "a workflow orders its nodes by edges, not by a key of the node; list " + strings.Join(edges, " and ") + " under `edges:`", true
}

// params checks the parameters of w.Nodes[i]. Paths such as
// nodes[3].command are built only for a message.
func (v *validator) params(n *Node, spec *node.Spec, i int) {
	// refused are the parameters whose value is refused already: the
	// kind's Check says nothing more of them.
	refused := map[string]bool{}
	for name, val := range n.Params {
		p, ok := spec.Param(name)
		if !ok {
			path := nodePath(i)
			var known []string
			for _, p := range spec.Params {
				known = append(known, p.Name)
			}
			hint := didYouMean(name, append(append([]string(nil), known...), CommonFields...))
			if edges, ok := edgeKeyHint(n, name, val); ok {
				v.d.errorf(n.keyPos(name), path+"."+name, n.ID, "unknown key %q for node type %s: %s", name, n.Type, edges)
				continue
			}
			list := "it takes no parameters"
			if len(known) > 0 {
				list = "its parameters: " + strings.Join(known, ", ")
			}
			v.d.errorf(n.keyPos(name), path+"."+name, n.ID, "unknown key %q for node type %s%s (%s)", name, n.Type, hint, list)
			continue
		}
		before := len(v.d.list)
		v.paramValue(n, p, val, n.ParamPos(name), func() string { return nodePath(i) + "." + name })
		if len(v.d.list) > before {
			refused[name] = true
		}
	}
	for _, p := range spec.Params {
		if _, ok := n.Params[p.Name]; p.Required && !ok {
			v.d.errorf(n.Pos, nodePath(i), n.ID, "node type %s needs parameter %q (%s); add `%s:` to the node", n.Type, p.Name, p.Description, p.Name)
		}
	}
	if spec.Check != nil {
		for _, pe := range spec.Check(n.Params) {
			if refused[paramName(pe.Param)] {
				continue
			}
			sev := Error
			if pe.Warning {
				sev = Warning
			}
			v.d.add(sev, n.posAt(pe.Param), nodePath(i)+"."+pe.Param, n.ID, "%s", pe.Message)
		}
	}
}

// paramName is the parameter a path such as "cases[1].name" is in.
func paramName(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return path
}

// posAt returns the position of the value at a parameter path such as
// "cases[1].name", as precisely as the path can be followed; a kind's Check
// may name an element of a parameter this way.
func (n *Node) posAt(path string) Pos {
	name := paramName(path)
	rest := path[len(name):]
	cur := n.rawAt(name)
	if cur == nil {
		return n.ParamPos(name)
	}
	pos := cur.pos
	for rest != "" {
		switch {
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return pos
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil || cur.kind != vList || i < 0 || i >= len(cur.list) {
				return pos
			}
			cur, rest = cur.list[i], rest[end+1:]
		case rest[0] == '.':
			key := rest[1:]
			if j := strings.IndexAny(key, ".["); j >= 0 {
				key, rest = key[:j], key[j:]
			} else {
				rest = ""
			}
			val, ok := cur.get(key)
			if !ok {
				return pos
			}
			cur = val
		default:
			return pos
		}
		pos = cur.pos
	}
	return pos
}

func isTemplated(val any) bool {
	s, ok := val.(string)
	return ok && expr.HasTemplate(s)
}

// paramValue checks a value against a declared parameter type. Templates
// stand for values known only at run time and are let through here (their
// references are checked later).
func (v *validator) paramValue(n *Node, p node.Param, val any, pos Pos, path func() string) {
	if val == nil {
		if p.Required {
			v.d.errorf(pos, path(), n.ID, "parameter %q of %s needs a value", p.Name, n.Type)
		}
		return
	}
	if isTemplated(val) && !p.NoTemplate && !p.Expr {
		return
	}
	if p.NoTemplate && isTemplated(val) {
		v.d.errorf(pos, path(), n.ID, "parameter %q of %s is taken as written, so it cannot be a template; write a value", p.Name, n.Type)
		return
	}
	if p.Expr {
		if _, ok := val.(string); !ok {
			v.d.errorf(pos, path(), n.ID, "parameter %q of %s must be an expression, not %s", p.Name, n.Type, describePlain(val))
		}
		return
	}
	if p.Type == node.List && len(p.Items) > 0 {
		list, ok := val.([]any)
		if !ok {
			v.d.errorf(pos, path(), n.ID, "parameter %q of %s must be a list, not %s", p.Name, n.Type, describePlain(val))
			return
		}
		v.items(n, p, list, path())
		return
	}
	if _, err := p.Coerce(val); err != nil {
		v.d.errorf(pos, path(), n.ID, "parameter %q of %s: %v%s%s", p.Name, n.Type, err, enumHint(p, val), yamlBoolHint(p, val))
	}
}

// yamlBoolHint says, for a true-or-false parameter written as a word
// older YAML read as a bool (yes, off), that the file's YAML reads it as
// text (textForBool).
func yamlBoolHint(p node.Param, val any) string {
	if said, ok := textForBool(val); ok && p.Type == node.Bool {
		return " (" + said + ")"
	}
	return ""
}

// textForBool says, of a string older YAML read as a bool (yes, off),
// that a workflow's YAML reads it as text, and what to write.
func textForBool(val any) (string, bool) {
	s, ok := val.(string)
	if !ok {
		return "", false
	}
	b, ok := node.YAML11Bool(s)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("YAML reads %s as text: write %s", s, b), true
}

// enumHint suggests the closest allowed value of an enum parameter.
func enumHint(p node.Param, val any) string {
	if s, ok := val.(string); ok && len(p.Enum) > 0 {
		return didYouMean(s, p.Enum)
	}
	return ""
}

func (v *validator) items(n *Node, p node.Param, list []any, path string) {
	var names []string
	for _, ip := range p.Items {
		names = append(names, ip.Name)
	}
	raw := n.rawAt(p.Name)
	for i, e := range list {
		ipath := fmt.Sprintf("%s[%d]", path, i)
		pos := n.ParamPos(p.Name)
		var rawItem *value
		if raw != nil && raw.kind == vList && i < len(raw.list) {
			rawItem = raw.list[i]
			pos = rawItem.pos
		}
		m, ok := e.(map[string]any)
		if !ok {
			v.d.errorf(pos, ipath, n.ID, "each entry of %s must be a map {%s}", p.Name, strings.Join(names, ", "))
			continue
		}
		for k := range m {
			if !contains(names, k) {
				kp := pos
				if rawItem != nil {
					if j := rawItem.find(k); j >= 0 {
						kp = rawItem.keys[j].keyPos
					}
				}
				v.d.errorf(kp, ipath+"."+k, n.ID, "unknown key %q in an entry of %s%s", k, p.Name, didYouMean(k, names))
			}
		}
		for _, ip := range p.Items {
			iv, ok := m[ip.Name]
			if !ok {
				if ip.Required {
					v.d.errorf(pos, ipath, n.ID, "an entry of %s needs %q", p.Name, ip.Name)
				}
				continue
			}
			v.paramValue(n, ip, iv, pos, func() string { return ipath + "." + ip.Name })
		}
	}
}

// rawAt returns the parsed value of a parameter.
func (n *Node) rawAt(key string) *value {
	if n.raw == nil {
		return nil
	}
	val, _ := n.raw.get(key)
	return val
}

func describePlain(val any) string {
	switch x := val.(type) {
	case string:
		if len(x) > 20 {
			x = x[:20] + "…"
		}
		return fmt.Sprintf("string %q", x)
	case int:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return fmt.Sprintf("number %g", x)
	case bool:
		return fmt.Sprintf("boolean %t", x)
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", val)
}

func (v *validator) spec(id string) (*Node, *node.Spec) {
	i, ok := v.g.Index[id]
	if !ok {
		return nil, nil
	}
	return v.g.Nodes[i], v.specs[i]
}

func (v *validator) edges() {
	w := v.w
	type key struct{ from, to, on string }
	seen := map[key]bool{}
	handlesUsed := make([][]string, len(w.Nodes))
	for i, e := range w.Edges {
		okFrom, okTo := true, true
		if _, ok := v.g.Index[e.From]; !ok && e.From != "" {
			v.d.errorf(orPos(e.fromPos, e.Pos), edgePath(i)+".from", "", "edge from unknown node %q%s", e.From, didYouMean(e.From, v.ids))
			okFrom = false
		}
		if _, ok := v.g.Index[e.To]; !ok && e.To != "" {
			v.d.errorf(orPos(e.toPos, e.Pos), edgePath(i)+".to", "", "edge to unknown node %q%s", e.To, didYouMean(e.To, v.ids))
			okTo = false
		}
		k := key{e.From, e.To, e.On}
		if seen[k] {
			v.d.warnf(e.Pos, edgePath(i), e.From, "edge %s → %s is written twice; remove one", e.From, e.To)
		}
		seen[k] = true
		if !okFrom || !okTo || e.From == "" {
			v.brokenEdges = true
			continue
		}
		fromIdx := v.g.Index[e.From]
		if !contains(handlesUsed[fromIdx], e.On) {
			handlesUsed[fromIdx] = append(handlesUsed[fromIdx], e.On)
		}
		src, spec := v.spec(e.From)
		if spec == nil {
			continue
		}
		if dst, dspec := v.spec(e.To); dspec != nil && dspec.Category == node.Trigger {
			v.d.errorf(orPos(e.toPos, e.Pos), edgePath(i)+".to", dst.ID, "edge into trigger %q: triggers start runs and take no incoming edges; remove the edge", e.To)
		}
		onErr := v.onError(src)
		switch {
		case e.On == HandleErrorName && spec.Role == node.RoleFail:
			v.d.errorf(orPos(e.onPos, e.Pos), edgePath(i)+".on", src.ID, "node %q (%s) takes no out-edges: it fails the run, whatever on_error says; remove the edge", src.ID, src.Type)
		case e.On == HandleErrorName:
			if onErr != OnErrorRoute {
				v.d.errorf(orPos(e.onPos, e.Pos), edgePath(i)+".on", src.ID, "edge leaves %q by its error handle, but the node has on_error: %s; set on_error: route on it", src.ID, onErr)
			}
		case hasHandle(spec, src.Params, e.On):
			if spec.Role == node.RoleWait && e.On == HandleTimeoutName && src.Timeout == nil {
				v.d.errorf(orPos(e.onPos, e.Pos), edgePath(i)+".on", src.ID, "edge leaves %q by its timeout handle, but the node has no timeout:; give it one (timeout: 24h) or remove the edge", src.ID)
			}
		case spec.Routes:
		case v.w.role(src) == node.RoleLoopEnd && e.On == "":
			l, _ := src.Params["loop"].(string)
			if e.To != l {
				v.d.errorf(e.Pos, edgePath(i), src.ID, "an endloop jumps back to its loop %q; an edge to %q is not allowed (continue after the loop from its done handle)", l, e.To)
			}
		default:
			allowed := spec.AllHandles(src.Params)
			var named []string
			for _, h := range allowed {
				if h != "" && h != node.HandleError && !slices.Contains(named, h) {
					named = append(named, h)
				}
			}
			msg := fmt.Sprintf("node %q (%s) has no handle %q", src.ID, src.Type, e.On)
			switch {
			case e.On == "" && len(named) > 0:
				msg = fmt.Sprintf("an edge from %q (%s) must name a handle with `on:` (one of %s)", src.ID, src.Type, strings.Join(named, ", "))
			case len(named) > 0:
				hint := didYouMean(e.On, named)
				if b, ok := node.YAML11Bool(e.On); ok && slices.Contains(named, b) {
					hint = fmt.Sprintf(`; YAML reads %s as text, not as %s: write on: "%s"`, e.On, b, b)
				}
				msg += fmt.Sprintf("%s (handles: %s)", hint, strings.Join(named, ", "))
			case len(allowed) == 0:
				msg = fmt.Sprintf("node %q (%s) takes no out-edges; remove the edge", src.ID, src.Type)
			default:
				msg += "; leave `on:` out for the default handle"
			}
			v.d.errorf(orPos(e.onPos, e.Pos), edgePath(i)+".on", src.ID, "%s", msg)
		}
	}
	for i, n := range w.Nodes {
		spec := v.specs[i]
		if spec == nil {
			continue
		}
		used := handlesUsed[i]
		switch n.Type {
		case "if":
			for _, h := range []string{"true", "false"} {
				if !contains(used, h) {
					v.d.warnf(n.Pos, "", n.ID, "if node %q has no %q edge; when the condition is %s the branch ends there", n.ID, h, h)
				}
			}
		}
		if spec.Role == node.RoleWait && n.Params["until"] == "signal" && n.Timeout != nil && !contains(used, HandleTimeoutName) {
			v.d.warnf(n.ParamPosOf("timeout"), "", n.ID, "wait %q has a timeout: but no edge with on: timeout; when no signal comes in time the branch ends there", n.ID)
		}
		if spec.Role == node.RoleFail {
			if n.OnError != "" && n.OnError != OnErrorFail {
				v.d.errorf(n.ParamPosOf("on_error"), "", n.ID, "node %q (%s) fails the run whatever its on_error; on_error: %s does not apply, so remove it", n.ID, n.Type, n.OnError)
			}
			continue
		}
		if v.onError(n) == OnErrorRoute && !contains(used, HandleErrorName) {
			v.d.warnf(n.ParamPosOf("on_error"), "", n.ID, "node %q has on_error: route but no edge with on: error; a failure ends the branch", n.ID)
		}
	}
}

// HandleErrorName is the handle followed on failure with on_error: route.
const HandleErrorName = "error"

// HandleTimeoutName is the handle a wait for a signal follows when its
// timeout: passes first.
const HandleTimeoutName = "timeout"

// hasHandle reports whether spec.AllHandles(params) holds h, without
// building the list when the kind's handles are fixed.
func hasHandle(spec *node.Spec, params map[string]any, h string) bool {
	switch {
	case spec.Handles == nil && (h == node.HandleDefault || h == node.HandleError):
		return true
	case contains(spec.Handles, h):
		return true
	case spec.DynamicHandles != nil:
		return contains(spec.DynamicHandles(params), h)
	}
	return false
}

func edgePath(i int) string { return "edges[" + strconv.Itoa(i) + "]" }

func orPos(p, fallback Pos) Pos {
	if p.Line == 0 {
		return fallback
	}
	return p
}

func (v *validator) onError(n *Node) string {
	if n.OnError != "" {
		return n.OnError
	}
	return v.w.Defaults.OnError
}

// queuePattern is what River accepts as a queue name.
var queuePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+([_-][a-z0-9]+)*$`) })

// MaxVisitsOf returns the visit limit of a node, defaults applied.
func (w *Workflow) MaxVisitsOf(n *Node) int {
	if n.MaxVisits != nil {
		return *n.MaxVisits
	}
	return w.Defaults.MaxVisits
}

func (v *validator) loops() {
	w, g := v.w, v.g
	ends := map[string][]int{} // loop id → endloop node indexes
	for i, n := range w.Nodes {
		if v.w.role(n) != node.RoleLoopEnd {
			continue
		}
		l, _ := n.Params["loop"].(string)
		if l == "" {
			continue
		}
		target, tspec := v.spec(l)
		switch {
		case target == nil:
			v.d.errorf(n.ParamPos("loop"), "", n.ID, "endloop names loop %q, but there is no such node%s", l, didYouMean(l, v.loopIDs()))
		case tspec != nil && !v.w.isLoop(target):
			v.d.errorf(n.ParamPos("loop"), "", n.ID, "endloop names %q, a node of type %s, not a loop or foreach; set loop: to the id of the loop or foreach whose body it ends", l, target.Type)
		default:
			ends[l] = append(ends[l], i)
		}
	}
	for i, n := range w.Nodes {
		if !v.w.isLoop(n) {
			continue
		}
		var starts []int
		for _, ei := range g.Out[i] {
			if e := g.Edges[ei]; e.On == "body" {
				starts = append(starts, e.To)
			}
		}
		if len(starts) == 0 {
			v.d.errorf(n.Pos, "", n.ID, "%s %q has no body: add an edge {from: %s, to: <first node>, on: body}", n.Type, n.ID, n.ID)
			continue
		}
		if len(ends[n.ID]) == 0 {
			v.d.errorf(n.Pos, "", n.ID, "the body of %s %q never reaches an endloop; end the body with a node {type: endloop, loop: %s}", n.Type, n.ID, n.ID)
			continue
		}
		// Walk the body without passing back through the loop itself.
		seen := map[int]bool{i: true}
		queue := append([]int(nil), starts...)
		found := false
		for len(queue) > 0 && !found {
			c := queue[0]
			queue = queue[1:]
			if seen[c] {
				continue
			}
			seen[c] = true
			for _, e := range ends[n.ID] {
				if e == c {
					found = true
				}
			}
			for _, ei := range g.Out[c] {
				if !g.Edges[ei].Back || g.Edges[ei].To != i {
					queue = append(queue, g.Edges[ei].To)
				}
			}
		}
		if !found {
			v.d.errorf(n.Pos, "", n.ID, "the body of %s %q never reaches its endloop %q; connect the last body node to it", n.Type, n.ID, w.Nodes[ends[n.ID][0]].ID)
		}
	}
}

// loopBodies reports edges that enter a loop or foreach body other than by
// the loop's body handle, or leave a body other than through its endloop.
// The scheduler runs a body as a unit, once per pass, so such an edge has
// no meaning (and the plan would refuse it). A body is every node reachable
// from the body handle without passing the loop or an endloop's jump back;
// a node belongs to the innermost body holding it.
func (v *validator) loopBodies() {
	g := v.g
	n := len(g.Nodes)
	var loops []int
	body := map[int][]bool{}
	size := map[int]int{}
	for i, nd := range g.Nodes {
		if !v.w.isLoop(nd) {
			continue
		}
		in := make([]bool, n)
		var queue []int
		for _, ei := range g.Out[i] {
			if e := g.Edges[ei]; e.On == "body" && !e.Back && !in[e.To] && e.To != i {
				in[e.To] = true
				queue = append(queue, e.To)
			}
		}
		for len(queue) > 0 {
			c := queue[0]
			queue = queue[1:]
			size[i]++
			for _, ei := range g.Out[c] {
				e := g.Edges[ei]
				if e.To == i || in[e.To] || (e.Back && v.w.role(g.Nodes[c]) == node.RoleLoopEnd) {
					continue
				}
				in[e.To] = true
				queue = append(queue, e.To)
			}
		}
		loops = append(loops, i)
		body[i] = in
	}
	if len(loops) == 0 {
		return
	}
	home := make([]int, n)
	for i := range home {
		home[i] = -1
		for _, l := range loops {
			if body[l][i] && (home[i] < 0 || size[l] < size[home[i]]) {
				home[i] = l
			}
		}
	}
	v.home = home
	for _, e := range g.Edges {
		from, to := g.Nodes[e.From], g.Nodes[e.To]
		if e.Implicit || home[e.From] == home[e.To] {
			continue
		}
		if v.w.role(from) == node.RoleLoopEnd {
			if l, _ := from.Params["loop"].(string); l == to.ID {
				continue
			}
		}
		if !e.Back && e.On == "body" && home[e.To] == e.From {
			continue
		}
		edge := fmt.Sprintf("edge %s → %s", from.ID, to.ID)
		if h := home[e.To]; h >= 0 && !body[h][e.From] {
			l := g.Nodes[h]
			v.d.errorf(e.Pos, "", from.ID, "%s enters the body of %s %q from outside; a body is entered only by the %s's body handle, so send the edge to %q instead", edge, l.Type, l.ID, l.Type, l.ID)
			continue
		}
		l := g.Nodes[home[e.From]]
		if e.To == home[e.From] {
			end := "an endloop node {type: endloop, loop: " + l.ID + "}"
			for _, c := range g.Nodes {
				if lp, _ := c.Params["loop"].(string); v.w.role(c) == node.RoleLoopEnd && lp == l.ID {
					end = fmt.Sprintf("its endloop %q", c.ID)
					break
				}
			}
			v.d.errorf(e.Pos, "", from.ID, "%s jumps back to %s %q without its endloop; to start the next pass, send the edge to %s", edge, l.Type, l.ID, end)
			continue
		}
		v.d.errorf(e.Pos, "", from.ID, "%s leaves the body of %s %q; end the body with its endloop and go on from the %s's done handle ({from: %s, to: %s, on: done})", edge, l.Type, l.ID, l.Type, l.ID, to.ID)
	}
}

func (v *validator) loopIDs() []string {
	var out []string
	for _, n := range v.w.Nodes {
		if v.w.isLoop(n) {
			out = append(out, n.ID)
		}
	}
	return out
}

// cycles finds the strongly connected components of the graph. Every node
// has a visit limit of at least 1 (see bounded), so no cycle runs forever;
// a cycle no run can leave is reported (endlessCycles).
func (v *validator) cycles() {
	g := v.g
	v.comp, _ = g.SCC(nil)
	v.endlessCycles()
}

// starts returns the nodes a run may start from: the triggers or, when the
// workflow has none, every entry node; from names them for messages.
func (v *validator) starts() (starts []int, from string) {
	for i, spec := range v.specs {
		if spec != nil && spec.Category == node.Trigger {
			starts = append(starts, i)
		}
	}
	if len(starts) == 0 {
		return v.g.Entries, "any entry node"
	}
	return starts, "any trigger"
}

// reachability warns about nodes no run reaches. A run starts at the trigger
// that fired, so when the workflow has triggers a node is reached only from
// them; without triggers every entry node starts.
func (v *validator) reachability() {
	if v.brokenEdges {
		return // what is reachable is not known until the edges name real nodes
	}
	g := v.g
	starts, from := v.starts()
	seen := g.Reachable(starts)
	for i, n := range g.Nodes {
		// Nodes with an unknown type or a duplicate id have errors already.
		if !seen[i] && v.specs[i] != nil && g.Index[n.ID] == i {
			v.d.warnf(n.Pos, "", n.ID, "node %q cannot be reached from %s and will not run; add an edge to it or remove it", n.ID, from)
		}
	}
}

// ignoreIdle turns into warnings the errors of nodes that never run: a
// disabled node, a node no trigger (or, without triggers, no entry node)
// reaches, and a node reached only by a handle a disabled node does not
// follow. A run ignores such a node, so its half-written settings do not
// keep the rest of the workflow from running. Only the problems of the
// node's own parameters, expressions and references are turned (see own):
// ids, types, edges and loops shape the whole graph and stay errors, and so
// does every problem of a trigger, which starts runs even when disabled.
func (v *validator) ignoreIdle() {
	if len(v.owner) == 0 {
		return
	}
	var reach, live []bool
	from := ""
	if !v.brokenEdges {
		var starts []int
		starts, from = v.starts()
		reach, live = v.g.Reachable(starts), v.live(starts)
	}
	var past []string // by node: the disabled node a dead node lies past
	for j := range v.d.list {
		i, owned := v.owner[j]
		d := &v.d.list[j]
		if !owned {
			continue
		}
		n, spec := v.g.Nodes[i], v.specs[i]
		if d.Severity != Error || spec == nil || spec.Category == node.Trigger {
			continue
		}
		var why string
		switch {
		case n.Disabled:
			why = "the node is disabled"
		case reach != nil && !reach[i]:
			why = "no run reaches the node from " + from
		case live != nil && !live[i]:
			if past == nil {
				past = v.pastDisabled(live)
			}
			why = "no run reaches the node past the disabled nodes before it"
			if k, ok := v.g.Index[past[i]]; ok {
				why = fmt.Sprintf("the node is reached only past disabled node %q, which follows only its %s handle", past[i], handleName(v.specs[k].FallThrough))
			}
		default:
			continue
		}
		d.Severity = Warning
		d.Message += "; ignored because " + why
		v.ignored = append(v.ignored, *d)
	}
	v.ignored.Sort()
}

// live returns the nodes a run can reach from starts, moving as the
// scheduler does: a disabled node is skipped and its run goes on only by
// its kind's fall-through handle.
func (v *validator) live(starts []int) []bool {
	g := v.g
	seen := make([]bool, len(g.Nodes))
	queue := append([]int(nil), starts...)
	for _, s := range starts {
		seen[s] = true
	}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, ei := range g.Out[c] {
			e := g.Edges[ei]
			if seen[e.To] || v.disabledDrops(e) {
				continue
			}
			seen[e.To] = true
			queue = append(queue, e.To)
		}
	}
	return seen
}

// disabledDrops reports whether a run never follows edge e because it
// leaves a disabled node by a handle other than the fall-through one.
// Triggers start runs whether disabled or not.
func (v *validator) disabledDrops(e GraphEdge) bool {
	spec := v.specs[e.From]
	return v.g.Nodes[e.From].Disabled && spec != nil && spec.Category != node.Trigger && e.On != spec.FallThrough
}

// pastDisabled names, for each node live does not hold but the graph
// reaches, a disabled node whose dropped edges lead to it.
func (v *validator) pastDisabled(live []bool) []string {
	g := v.g
	past := make([]string, len(g.Nodes))
	var queue []int
	for c := range g.Nodes {
		if !live[c] {
			continue
		}
		for _, ei := range g.Out[c] {
			if e := g.Edges[ei]; v.disabledDrops(e) && !live[e.To] && past[e.To] == "" {
				past[e.To] = g.Nodes[c].ID
				queue = append(queue, e.To)
			}
		}
	}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, ei := range g.Out[c] {
			if to := g.Edges[ei].To; !live[to] && past[to] == "" {
				past[to] = past[c]
				queue = append(queue, to)
			}
		}
	}
	return past
}

// handleName is a handle as messages name it: "" is the default handle.
func handleName(h string) string {
	if h == "" {
		return "default"
	}
	return strconv.Quote(h)
}

// toolWorkflow checks the child workflow of an agent's workflow tool: its
// file exists and parses (it is validated in full when the tool runs).
func (v *validator) toolWorkflow(n *Node, param string, i int, m map[string]any) {
	f, ok := m["workflow"].(string)
	if !ok || f == "" || expr.HasTemplate(f) || v.w.File == "" {
		return
	}
	full := f
	if !filepath.IsAbs(f) {
		full = filepath.Join(filepath.Dir(v.w.File), f)
	}
	at := fmt.Sprintf("%s[%d].workflow", param, i)
	if _, err := v.w.childFile(f); err != nil {
		v.d.errorf(n.ParamPos(param), at, n.ID, "tool %v: %v", m["name"], err)
		return
	}
	if _, err := os.Stat(full); err != nil {
		v.d.errorf(n.ParamPos(param), at, n.ID, "child workflow %q of tool %v not found (looked for %s)", f, m["name"], full)
		return
	}
	src, err := ReadFile(full)
	if err != nil {
		v.d.errorf(n.ParamPos(param), at, n.ID, "the workflow of tool %v, %q, cannot be read (looked for %s): %v", m["name"], f, full, err)
		return
	}
	if _, ds := Decode(full, src); ds.HasErrors() {
		v.d.errorf(n.ParamPos(param), at, n.ID, "the workflow of tool %v, %q, is not a valid workflow file\n%s", m["name"], f, indent(ds.Error()))
		return
	}
	v.child(n, param, at, f, full)
}

// child validates the child workflow at full (f as written) that node n
// runs, as the run does when the node starts it: a child that is not
// valid, or that is one of the workflows running it (a recursion the
// engine refuses), fails the node every time it runs, so validate says
// so at the node. It returns the child when it is valid.
func (v *validator) child(n *Node, param, at, f, full string) *Workflow {
	if v.children == nil {
		return nil
	}
	abs := absPath(full)
	if i := slices.Index(v.chain, abs); i >= 0 {
		v.d.errorf(n.ParamPos(param), at, n.ID, "child workflow %q is a workflow that runs this one (%s): a workflow cannot run itself as a child, even through others",
			f, v.chainText(append(slices.Clip(v.chain[i:]), abs)))
		return nil
	}
	if len(v.chain) > MaxChildDepth {
		v.d.errorf(n.ParamPos(param), at, n.ID, "child workflow %q makes subworkflows nest deeper than %d levels (%s); a run refuses that, so flatten the chain",
			f, MaxChildDepth, v.chainText(append(slices.Clip(v.chain), abs)))
		return nil
	}
	src, err := ReadFile(full)
	if err != nil {
		v.d.errorf(n.ParamPos(param), at, n.ID, "child workflow %q cannot be read: %v", f, err)
		return nil
	}
	cw, ds := Decode(full, src)
	if cw != nil && !ds.HasErrors() {
		// By depth too: how deep it nests below decides its problems.
		key := strconv.Itoa(len(v.chain)) + " " + abs
		if prior, ok := v.children[key]; ok {
			ds = prior
		} else {
			ds = validate(cw, v.reg, v.chain, v.children)
			v.children[key] = ds
		}
	}
	if ds.HasErrors() {
		v.d.errorf(n.ParamPos(param), at, n.ID, "child workflow %q is not valid, so the node would fail each time it runs\n%s", f, indent(ds.Error()))
		return nil
	}
	return cw
}

// indent indents each line of s by two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// chainText names the files of a chain of subworkflows, each relative to
// the folder of the first.
func (v *validator) chainText(files []string) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f
		if rel, err := filepath.Rel(filepath.Dir(files[0]), f); err == nil {
			names[i] = rel
		}
	}
	return strings.Join(names, " → ")
}

// childInputs checks the inputs a subworkflow node gives its valid child
// cw, as written: a name the child does not declare, a required input
// left out, and a value written as itself of the wrong type fail the node
// each time it runs.
func (v *validator) childInputs(n *Node, f string, cw *Workflow) {
	given, ok := n.Params["inputs"].(map[string]any)
	if !ok {
		if _, set := n.Params["inputs"]; set {
			return // a template gives the whole map
		}
		given = map[string]any{}
	}
	var names []string
	for _, in := range cw.Inputs {
		names = append(names, in.Name)
	}
	keys := slices.Sorted(maps.Keys(given))
	for _, k := range keys {
		in := cw.Input(k)
		switch {
		case in == nil && len(names) == 0:
			v.d.errorf(n.posAt("inputs."+k), "", n.ID, "child workflow %q takes no inputs, so it cannot be given %q", f, k)
		case in == nil:
			v.d.errorf(n.posAt("inputs."+k), "", n.ID, "child workflow %q takes no input %q%s (its inputs: %s)", f, k, didYouMean(k, names), strings.Join(names, ", "))
		case given[k] != nil && !isTemplated(given[k]) && !valueHasType(wholeNumbers(given[k]), in.Type):
			v.d.errorf(n.posAt("inputs."+k), "", n.ID, "input %q of child workflow %q must be %s, not %s", k, f, article(in.Type), describePlain(given[k]))
		}
	}
	var missing []string
	for _, in := range cw.Inputs {
		if in.Required && in.Default == nil && absent(in, given) {
			missing = append(missing, in.Name)
		}
	}
	if len(missing) > 0 {
		v.d.errorf(n.ParamPos("inputs"), "", n.ID, "child workflow %q needs input %s, which the node does not give; add it to the node's inputs", f, strings.Join(missing, ", "))
	}
}

func (v *validator) servers() {
	w := v.w
	var names []string
	for _, s := range w.MCPServers {
		names = append(names, s.Name)
	}
	var models []string
	for _, l := range w.LLM {
		models = append(models, l.Name)
	}
	for i, n := range w.Nodes {
		if v.specs[i] != nil {
			v.own(i, func() { v.nodeServers(n, v.specs[i], names, models) })
		}
	}
	if w.Evidence != nil && w.Evidence.Server != "" && w.MCPServer(w.Evidence.Server) == nil {
		v.d.errorf(w.Evidence.Pos, "evidence.server", "", "evidence uses MCP server %q, which mcp_servers does not declare%s", w.Evidence.Server, didYouMean(w.Evidence.Server, names))
	}
}

// nodeServers checks what a node's parameters name: MCP servers and their
// tools, models, child workflows. names are the declared MCP servers,
// models the declared models.
func (v *validator) nodeServers(n *Node, spec *node.Spec, names, models []string) {
	w := v.w
	for _, p := range spec.Params {
		val, ok := n.Params[p.Name]
		if !ok || p.Ref == node.RefNone {
			continue
		}
		// A reference is checked as the kind gets it: coerced to the
		// parameter's type (a server written as a number is its text).
		if cv, err := p.Coerce(val); err == nil && cv != nil {
			val = cv
		}
		switch p.Ref {
		case node.RefMCPServer:
			if srv, ok := val.(string); ok && w.MCPServer(srv) == nil {
				v.d.errorf(n.ParamPos(p.Name), "", n.ID, "node uses MCP server %q, which mcp_servers does not declare%s", srv, didYouMean(srv, names))
			}
		case node.RefMCPTools:
			tools, _ := val.([]any)
			if s, ok := val.(string); ok {
				tools = []any{s} // one pattern
			}
			for i, t := range tools {
				if m, ok := t.(map[string]any); ok {
					v.toolWorkflow(n, p.Name, i, m)
					continue
				}
				s, _ := t.(string)
				srv, _, _ := strings.Cut(s, ".")
				if w.MCPServer(srv) == nil && !expr.HasTemplate(s) {
					v.d.errorf(n.ParamPos(p.Name), "", n.ID, "tool %q names MCP server %q, which mcp_servers does not declare%s", s, srv, didYouMean(srv, names))
				}
			}
		case node.RefModel:
			names, _ := val.([]any) // a list of models: fallbacks
			if m, ok := val.(string); ok {
				names = []any{m}
			}
			for _, x := range names {
				if m, ok := x.(string); ok && len(w.LLM) > 0 && w.LLMConfig(m) == nil {
					v.d.errorf(n.ParamPos(p.Name), "", n.ID, "model %q is not declared under llm:%s", m, didYouMean(m, models))
				}
			}
		case node.RefWorkflow:
			if f, ok := val.(string); ok && w.File != "" && !expr.HasTemplate(f) {
				full := f
				if !filepath.IsAbs(f) {
					full = filepath.Join(filepath.Dir(w.File), f)
				}
				if _, err := w.childFile(f); err != nil {
					v.d.errorf(n.ParamPos(p.Name), "", n.ID, "%v", err)
				} else if _, err := os.Stat(full); err != nil {
					v.d.errorf(n.ParamPos(p.Name), "", n.ID, "child workflow %q not found (looked for %s)", f, full)
				} else if cw := v.child(n, p.Name, "", f, full); cw != nil && spec.Role == node.RoleSubworkflow {
					v.childInputs(n, f, cw)
					if v.childOf == nil {
						v.childOf = map[string]*Workflow{}
					}
					v.childOf[n.ID] = cw
				}
			}
		}
	}
}
