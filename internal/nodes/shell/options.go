package shell

import (
	"fmt"
	"strings"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/node"
)

// A program reads an argument that begins with "-" as an option, so a
// templated argv element could turn data into an option: [git, clone,
// "{{ inputs.repo }}"] with repo "--upload-pack=touch /tmp/pwned" runs a
// command. The shell kind therefore refuses, at run time, an element whose
// first character came from a template and that renders to text beginning
// with "-", unless
//
//   - it comes after a literal "--" element (the usual end of options), or
//   - the node sets allow_option_args: true.
//
// "-" alone passes: it is an operand (often standard input), never an
// option. Elements written literally (-c, --force, "--branch={{ b }}") are
// the author's own options and pass. The program itself (element 0) is not
// checked. With shell: true nothing is checked: the script is the program
// and decides how it uses "$1"; write `git clone -- "$1"` there.
// `skein validate` warns about every element the rule could refuse.

// templatedLead reports whether the first character of the rendered
// element comes from a template: the element holds {{ }} and nothing but
// spaces precedes its first {{.
func templatedLead(s string) bool {
	i := strings.Index(s, "{{")
	return i >= 0 && strings.TrimSpace(s[:i]) == ""
}

// exposed returns, for each of the n rendered elements of the argv list,
// whether it would be refused if it began with "-": its first character came
// from a template and no literal "--" precedes it. written is the command
// as written. A nil written (the host does not know it) exposes nothing; a
// written command that cannot be matched to the rendered list element by
// element (one template gave the whole list) exposes every argument.
func exposed(written any, n int) []bool {
	out := make([]bool, n)
	if written == nil {
		return out
	}
	list, ok := written.([]any)
	if !ok || len(list) != n {
		for i := 1; i < n; i++ {
			out[i] = true
		}
		return out
	}
	for i := 1; i < n; i++ {
		s, ok := list[i].(string)
		if ok && s == "--" {
			break
		}
		out[i] = ok && templatedLead(s)
	}
	return out
}

// isOption reports whether a program would read arg as an option.
func isOption(arg string) bool { return len(arg) > 1 && arg[0] == '-' }

// checkOptions refuses a templated argv element that would be read as an
// option; see the rule above. args is the rendered list, before /bin/sh is
// put in front of it.
func checkOptions(nodeID, label string, written any, args []string) error {
	ex := exposed(written, len(args))
	for i, a := range args {
		if !ex[i] || !isOption(a) {
			continue
		}
		e := node.Failf(node.CategoryValidation, "option_argument",
			"node %s: argument %d of command came from a template and begins with \"-\", so %s would read it as an option; "+
				"put a literal \"--\" element before it to end the options (e.g. [git, clone, --, \"{{ inputs.repo }}\"]), "+
				"or set allow_option_args: true if the template is meant to give options",
			nodeID, i, label)
		e.Permanent = true
		e.Details = map[string]any{"argument": i}
		return e
	}
	return nil
}

// optionWarnings finds, in a command as written, the elements the run-time
// rule could refuse: for skein validate.
func optionWarnings(p map[string]any) []node.ParamError {
	if allow, ok := p["allow_option_args"]; ok && allow != nil { // null is no value: false
		if b, isBool := allow.(bool); !isBool || b {
			return nil // allowed, or known at run time only
		}
	}
	switch sh := p["shell"].(type) {
	case nil:
	case bool:
		if sh {
			return nil
		}
	default:
		return nil // a template: known at run time only
	}
	const fix = "put a literal \"--\" element before it, or set allow_option_args: true if the program reads no options there or the template is meant to give them"
	switch c := p["command"].(type) {
	case string:
		if expr.HasTemplate(c) {
			return []node.ParamError{{Param: "command", Warning: true,
				Message: "command comes from a template as a whole; an argument of it that begins with \"-\" would be read as an option, so the run refuses it: " +
					"write the argv list with a literal \"--\" element before the templated arguments, or set allow_option_args: true"}}
		}
	case []any:
		var out []node.ParamError
		for i, ok := range exposed(c, len(c)) {
			if ok {
				out = append(out, node.ParamError{Param: fmt.Sprintf("command[%d]", i), Warning: true,
					Message: fmt.Sprintf("argument %d of command comes from a template; if it begins with \"-\" the program would read it as an option, so the run refuses it: %s", i, fix)})
			}
		}
		return out
	}
	return nil
}
