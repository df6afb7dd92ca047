package edit

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/skeinhq/skein/expr"
)

// refSplices rewrites the references to node id as references to node to:
// in every template ({{ }}) of the nodes' fields and of outputs, and in the
// expression fields — a node's condition and exit, a switch case's
// condition, a check's expr. Only the root name of each reference
// changes; a scalar whose text could not be rewritten in place is
// written again by the encoder, in the file's style.
func (d *doc) refSplices(id, to string) ([]splice, error) {
	var sps []splice
	visit := func(t *tnode, path []string) error {
		sp, ok, err := d.renameIn(t, path, id, to)
		if ok {
			sps = append(sps, sp)
		}
		return err
	}
	for _, it := range d.nodeList().items {
		if it.val.kind != 'm' {
			continue
		}
		for _, e := range it.val.entries {
			if e.key == "id" || e.key == "type" {
				continue
			}
			if err := walkScalars(e.val, []string{e.key}, visit); err != nil {
				return nil, err
			}
		}
	}
	if o := d.root.get("outputs"); o != nil {
		if err := walkScalars(o.val, []string{"outputs"}, visit); err != nil {
			return nil, err
		}
	}
	return sps, nil
}

// walkScalars calls f for every string scalar under t, with its path.
func walkScalars(t *tnode, path []string, f func(*tnode, []string) error) error {
	switch t.kind {
	case 's':
		if t.null || t.empty {
			return nil
		}
		return f(t, path)
	case 'm':
		for _, e := range t.entries {
			if err := walkScalars(e.val, append(slices.Clip(path), e.key), f); err != nil {
				return err
			}
		}
	case 'l':
		for i, it := range t.items {
			if err := walkScalars(it.val, append(slices.Clip(path), strconv.Itoa(i)), f); err != nil {
				return err
			}
		}
	}
	return nil
}

// isExpression tells the fields the standard kinds evaluate as
// expressions, by their path in a node.
func isExpression(path []string) bool {
	switch len(path) {
	case 1:
		return path[0] == "condition" || path[0] == "exit"
	case 3:
		return (path[0] == "cases" && path[2] == "condition") || (path[0] == "checks" && path[2] == "expr")
	}
	return false
}

// renameIn returns the splice that renames the references to id in
// scalar t; ok is false when it has none.
func (d *doc) renameIn(t *tnode, path []string, id, to string) (sp splice, ok bool, err error) {
	var refs []expr.Ref
	switch {
	case expr.HasTemplate(t.text):
		tpl, perr := expr.ParseTemplate(t.text)
		if perr != nil {
			return sp, false, nil // validation reports it
		}
		refs, _ = tpl.References()
	case path[0] != "outputs" && isExpression(path):
		refs, _ = expr.References(t.text)
	}
	var offs []int
	for _, r := range refs {
		if r.Root == id && strings.HasPrefix(t.text[r.Offset:], id) {
			offs = append(offs, r.Offset)
		}
	}
	if len(offs) == 0 {
		return sp, false, nil
	}
	if t.fixed {
		return sp, false, errLayout
	}
	want := replaceAt(t.text, offs, id, to)
	raw := string(d.src[t.start:t.end])
	block := t.y != nil && (t.y.Style == yaml.LiteralStyle || t.y.Style == yaml.FoldedStyle)
	if text, ok := renameRaw(raw, t.text, offs, id, to); ok && d.decodes(text, want, block) {
		return splice{t.start, t.end, text}, true, nil
	}
	if block {
		return sp, false, errLayout
	}
	text, err := d.scalar(want)
	if err != nil {
		return sp, false, err
	}
	return splice{t.start, t.end, text}, true, nil
}

// replaceAt replaces id by to at each of offs of s.
func replaceAt(s string, offs []int, id, to string) string {
	var b strings.Builder
	last := 0
	for _, o := range offs {
		b.WriteString(s[last:o])
		b.WriteString(to)
		last = o + len(id)
	}
	b.WriteString(s[last:])
	return b.String()
}

// renameRaw renames, in a scalar's text as written, the occurrences of id
// that stand for the references at offs of its value: the k-th whole-word
// id of the value is the k-th of the text, since quoting and folding never
// split a name.
func renameRaw(raw, value string, offs []int, id, to string) (string, bool) {
	inValue := words(value, id)
	inRaw := words(raw, id)
	if len(inValue) != len(inRaw) {
		return "", false
	}
	var at []int
	for _, o := range offs {
		k := slices.Index(inValue, o)
		if k < 0 {
			return "", false
		}
		at = append(at, inRaw[k])
	}
	return replaceAt(raw, at, id, to), true
}

// words returns the offsets of id in s as a whole name.
func words(s, id string) []int {
	var out []int
	for i := 0; ; {
		j := strings.Index(s[i:], id)
		if j < 0 {
			return out
		}
		o := i + j
		if (o == 0 || !nameByte(s[o-1])) && (o+len(id) == len(s) || !nameByte(s[o+len(id)])) {
			out = append(out, o)
		}
		i = o + len(id)
	}
}

func nameByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// decodes reports whether a scalar written as text reads as want; a block
// scalar's final line breaks, which depend on what follows it in the
// file, are not compared.
func (d *doc) decodes(text, want string, block bool) bool {
	var got string
	if d.json {
		return json.Unmarshal([]byte(text), &got) == nil && got == want
	}
	var n yaml.Node
	if yaml.Unmarshal([]byte(text), &n) != nil || len(n.Content) != 1 || n.Content[0].Kind != yaml.ScalarNode {
		return false
	}
	got = n.Content[0].Value
	if block {
		return strings.TrimRight(got, "\n") == strings.TrimRight(want, "\n")
	}
	return got == want
}
