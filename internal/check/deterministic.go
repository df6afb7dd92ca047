package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/jsonvalid"
	"github.com/skeinhq/skein/workflow"
)

// deterministic answers a check that needs no model.
func (e *evaluator) deterministic(c *workflow.Check, out map[string]any, scope *expr.Scope) (Verdict, string, map[string]any) {
	switch c.Type {
	case "expr":
		return exprCheck(c, scope)
	case "contains":
		return containsCheck(c, out, true)
	case "not_contains":
		return containsCheck(c, out, false)
	case "regex":
		return regexCheck(c, out)
	case "json_schema":
		return schemaCheck(c, out)
	case "http_status":
		return statusCheck(c, out)
	case "file_exists":
		return fileCheck(c, e.dir)
	default:
		return Error, fmt.Sprintf("unknown check type %q", c.Type), nil
	}
}

func exprCheck(c *workflow.Check, scope *expr.Scope) (Verdict, string, map[string]any) {
	src := strings.TrimSpace(c.Expr)
	if src == "" {
		if s, ok := c.Params["expr"].(string); ok {
			src = strings.TrimSpace(s)
		}
	}
	if src == "" {
		return Error, "the check has no expr", nil
	}
	ev := map[string]any{"expr": src}
	p, err := expr.Compile(src)
	if err != nil {
		return Error, err.Error(), ev
	}
	ok, err := p.EvalBool(scope)
	switch {
	case err != nil:
		return Error, err.Error(), ev
	case ok:
		return Pass, fmt.Sprintf("`%s` is true", src), ev
	default:
		return Fail, fmt.Sprintf("`%s` is false", src), ev
	}
}

func containsCheck(c *workflow.Check, out map[string]any, want bool) (Verdict, string, map[string]any) {
	val, ok := c.Params["value"]
	if !ok {
		return Error, fmt.Sprintf("%s check needs value", c.Type), nil
	}
	tv, name, ev, err := resolveTarget(c, out)
	if err != nil {
		return Error, err.Error(), ev
	}
	plainVal, err := plain(val)
	if err != nil {
		return Error, fmt.Sprintf("value cannot be read as JSON: %v", err), ev
	}
	found, how := contains(tv, plainVal)
	verb := map[bool]string{true: "contains", false: "does not contain"}
	desc := fmt.Sprintf("%s %s %s%s", name, verb[found], jsonText(plainVal), how)
	if found == want {
		return Pass, desc, ev
	}
	return Fail, desc, ev
}

// contains reports whether target holds v: a substring of a string, an
// element of a list, a substring of anything else's JSON text.
func contains(target, v any) (bool, string) {
	switch t := target.(type) {
	case string:
		return strings.Contains(t, text(v)), ""
	case []any:
		want := jsonText(v)
		for i, item := range t {
			if jsonText(item) == want {
				return true, fmt.Sprintf(" (item %d)", i)
			}
		}
		return false, fmt.Sprintf(" (among %s)", plural(len(t), "item"))
	default:
		hay := jsonText(t)
		if strings.Contains(hay, text(v)) {
			return true, ""
		}
		// A string appears escaped in JSON text.
		if s, ok := v.(string); ok {
			q := jsonText(s)
			return strings.Contains(hay, q[1:len(q)-1]), ""
		}
		return false, ""
	}
}

func regexCheck(c *workflow.Check, out map[string]any) (Verdict, string, map[string]any) {
	pat, ok := c.Params["pattern"].(string)
	if !ok || pat == "" {
		return Error, "regex check needs pattern, a string", nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return Error, fmt.Sprintf("pattern is not a valid regular expression: %v", err), map[string]any{"pattern": pat}
	}
	tv, name, ev, err := resolveTarget(c, out)
	if ev == nil {
		ev = map[string]any{}
	}
	ev["pattern"] = pat
	if err != nil {
		return Error, err.Error(), ev
	}
	hay := text(tv)
	if loc := re.FindStringIndex(hay); loc != nil {
		return Pass, fmt.Sprintf("%s matches /%s/ at %s", name, pat, clip(strconv.Quote(hay[loc[0]:loc[1]]), 80)), ev
	}
	return Fail, fmt.Sprintf("%s does not match /%s/", name, pat), ev
}

func schemaCheck(c *workflow.Check, out map[string]any) (Verdict, string, map[string]any) {
	raw, ok := c.Params["schema"]
	if !ok {
		return Error, "json_schema check needs schema", nil
	}
	switch raw.(type) {
	case map[string]any, bool:
	default:
		return Error, fmt.Sprintf("schema must be a map (a JSON Schema), not %s", typeName(raw)), nil
	}
	doc, err := plain(raw)
	if err != nil {
		return Error, fmt.Sprintf("schema cannot be read as JSON: %v", err), nil
	}
	// Only references inside the schema are followed: a check's schema
	// never makes Skein fetch anything.
	sch, err := jsonvalid.Compile(doc)
	if err != nil {
		return Error, "schema is not valid: " + oneLine(err.Error()), nil
	}
	tv, name, ev, err := resolveTarget(c, out)
	if err != nil {
		return Error, err.Error(), ev
	}
	inst, err := plain(tv)
	if err != nil {
		return Error, fmt.Sprintf("%s cannot be read as JSON: %v", name, err), ev
	}
	problems, err := sch.Validate(inst)
	if err != nil {
		return Error, fmt.Sprintf("validating %s: %v", name, err), ev
	}
	if len(problems) == 0 {
		return Pass, name + " matches the schema", ev
	}
	return Fail, fmt.Sprintf("%s does not match the schema: %s", name, schemaErrors(problems)), ev
}

// schemaErrors lists the first problems of a validation, on one line:
// "at /0/id: is required; at /1: got string, want object".
func schemaErrors(problems []jsonvalid.Problem) string {
	const most = 3
	msgs := make([]string, 0, most)
	for _, p := range problems[:min(most, len(problems))] {
		loc := p.Pointer()
		if loc == "" {
			loc = "/"
		}
		msgs = append(msgs, fmt.Sprintf("at %s: %s", loc, p.Message))
	}
	more := ""
	if len(problems) > most {
		more = fmt.Sprintf("; and %d more", len(problems)-most)
	}
	return strings.Join(msgs, "; ") + more
}

func statusCheck(c *workflow.Check, out map[string]any) (Verdict, string, map[string]any) {
	want, ok := c.Params["status"]
	if !ok {
		return Error, "http_status check needs status", nil
	}
	raw, ok := out["status"]
	if !ok {
		return Error, "the output has no status (http_status reads output.status)" + available(out), nil
	}
	got, ok := integer(raw)
	if !ok {
		return Error, fmt.Sprintf("output.status is %s, not a status code", typeName(raw)), nil
	}
	ev := map[string]any{"status": got}
	var alts []any
	if l, isList := want.([]any); isList {
		alts = l
	} else {
		alts = []any{want}
	}
	if len(alts) == 0 {
		return Error, "status must be a code, a list of codes or a class such as \"2xx\", not an empty list", ev
	}
	descs := make([]string, 0, len(alts))
	match := false
	for _, a := range alts {
		m, desc, err := statusMatch(got, a)
		if err != nil {
			return Error, err.Error(), ev
		}
		match = match || m
		descs = append(descs, desc)
	}
	expected := strings.Join(descs, " or ")
	if match {
		return Pass, fmt.Sprintf("status %d matches %s", got, expected), ev
	}
	return Fail, fmt.Sprintf("status %d, expected %s", got, expected), ev
}

// statusMatch matches a status code against a code ("200", 200) or a class
// ("2xx").
func statusMatch(got int, want any) (bool, string, error) {
	if s, ok := want.(string); ok {
		s = strings.ToLower(strings.TrimSpace(s))
		if len(s) == 3 && s[1:] == "xx" && s[0] >= '1' && s[0] <= '5' {
			return got/100 == int(s[0]-'0'), s, nil
		}
		if n, err := strconv.Atoi(s); err == nil {
			want = n
		}
	}
	n, ok := integer(want)
	if !ok || n < 100 || n > 599 {
		return false, "", fmt.Errorf("status must be a code (100 to 599), a list of codes or a class such as \"2xx\", not %s", jsonText(want))
	}
	return got == n, strconv.Itoa(n), nil
}

func fileCheck(c *workflow.Check, dir string) (Verdict, string, map[string]any) {
	p, ok := c.Params["path"].(string)
	if !ok || strings.TrimSpace(p) == "" {
		return Error, "file_exists check needs path, a string", nil
	}
	if expr.HasTemplate(p) {
		return Error, fmt.Sprintf("path %q is a template; check parameters are not rendered", p), nil
	}
	full := p
	if !filepath.IsAbs(p) && dir != "" {
		full = filepath.Join(dir, p)
	}
	ev := map[string]any{"path": full}
	fi, err := os.Stat(full)
	switch {
	case err == nil && fi.IsDir():
		return Pass, fmt.Sprintf("%s exists (a folder)", full), ev
	case err == nil:
		return Pass, fmt.Sprintf("%s exists (%d bytes)", full, fi.Size()), ev
	case errors.Is(err, fs.ErrNotExist):
		return Fail, fmt.Sprintf("%s does not exist", full), ev
	default:
		return Error, fmt.Sprintf("cannot tell whether %s exists: %v", full, err), ev
	}
}

// resolveTarget returns the value a check looks at, a name for it, and the
// evidence naming it.
func resolveTarget(c *workflow.Check, out map[string]any) (any, string, map[string]any, error) {
	whole, err := blob.Resolve(out) // big values are checked as what they hold
	if err != nil {
		return nil, "", nil, err
	}
	root, err := plain(whole)
	if err != nil {
		return nil, "", nil, fmt.Errorf("the output cannot be read as JSON: %w", err)
	}
	raw, ok := c.Params["target"]
	if !ok || raw == nil || raw == "" {
		return root, "the output", nil, nil
	}
	path, ok := raw.(string)
	if !ok {
		return nil, "", nil, fmt.Errorf("target must be a dotted path such as body.items, not %s", typeName(raw))
	}
	ev := map[string]any{"target": path}
	v, err := lookup(root, path)
	if err != nil {
		return nil, "", ev, err
	}
	return v, path, ev, nil
}

// lookup follows a dotted path (body.items.0.id) into a plain value.
func lookup(root any, path string) (any, error) {
	if expr.HasTemplate(path) {
		return nil, fmt.Errorf("target %q is a template; write a dotted path such as body.items", path)
	}
	cur := root
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		at := strings.Join(segs[:i], ".")
		if seg == "" {
			return nil, fmt.Errorf("target %q has an empty part; write a dotted path such as body.items", path)
		}
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[seg]
			if !ok {
				where := "the output"
				if at != "" {
					where = at
				}
				return nil, fmt.Errorf("target %s: %s has no field %q%s", path, where, seg, available(t))
			}
			cur = v
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(t) {
				return nil, fmt.Errorf("target %s: %s is a list of %d items; %q is not an index in it", path, at, len(t), seg)
			}
			cur = t[n]
		default:
			return nil, fmt.Errorf("target %s: %s is %s, which has no field %q", path, at, typeName(cur), seg)
		}
	}
	return cur, nil
}

// available lists a map's keys for an error message.
func available(m map[string]any) string {
	const most = 12
	if len(m) == 0 {
		return " (it has no fields)"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	more := ""
	if len(keys) > most {
		more = fmt.Sprintf(", and %d more", len(keys)-most)
		keys = keys[:most]
	}
	return " (available fields: " + strings.Join(keys, ", ") + more + ")"
}

// plain converts a value to the types JSON decoding gives (map[string]any,
// []any, float64, string, bool, nil), so outputs built in Go and outputs
// read back from disk compare alike.
func plain(v any) (any, error) {
	b, err := marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// marshal encodes v as compact JSON without HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// jsonText is v's compact JSON text (its Go form if it has none).
func jsonText(v any) string {
	b, err := marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// text is a string itself, anything else its JSON text.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return jsonText(v)
}

// integer returns v as an int when it is a whole number.
func integer(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1e9 {
			return int(n), true
		}
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case int, int64, float64, json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

// oneLine joins the lines of s.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
