package shell

import (
	"fmt"
	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/node"
)

// Kind is the kind name.
const Kind = "shell"

// DefaultMaxOutput is how many bytes of each stream a command keeps unless
// max_output says otherwise: 10 MiB.
const DefaultMaxOutput = 10 << 20

// Spec declares the shell kind.
var Spec = node.Spec{
	Kind: Kind, Category: node.Action,
	Description: "Runs a command. The output is {stdout, stderr, exit_code, truncated, json}; json is stdout parsed when it is JSON, and the `_` keys of a JSON object on stdout (`_route`, `_state_patch`) are directives.",
	Params: []node.Param{
		{Name: "command", Type: node.Any, Required: true, Description: "The argv list, e.g. [grep, -c, --, \"{{ inputs.word }}\", file.txt]; each element is one argument, never split or read by a shell, and a templated one that begins with \"-\" is refused unless it follows a literal \"--\" (see allow_option_args). A string only with shell: true; with shell: true a list is the script followed by its arguments ($1, $2, …)."},
		{Name: "shell", Type: node.Bool, Default: false, Description: "Run command through /bin/sh -c. Templated values in the script are not quoted; pass them as arguments instead."},
		{Name: "env", Type: node.Map, Description: "Environment variables for the command. It also gets PATH, HOME, LANG, TMPDIR and USER from Skein's environment and, on Linux, SKEIN_PROC_STARTING (the tag by which Skein's guardian finds a command whose start Skein did not live to finish), and nothing else: secrets reach it only through here."},
		{Name: "cwd", Type: node.String, Description: "Working folder; by default Skein's own."},
		{Name: "stdin", Type: node.String, Description: "Text written to the command's standard input (a list or map is written as JSON). Without it, stdin is empty."},
		{Name: "allow_option_args", Type: node.Bool, Default: false, Description: "Let templated arguments begin with \"-\". Without it, an argv element whose first character comes from a template and that renders to text beginning with \"-\" (\"-\" alone excepted) fails the node before the program starts, since the program would read it as an option ([git, clone, \"{{ inputs.repo }}\"] with repo --upload-pack=… runs a command); elements after a literal \"--\" element are not checked, nor are those of shell: true, whose script decides how it uses its arguments. Set it only when the template is meant to give options."},
		{Name: "allow_failure", Type: node.Bool, Default: false, Description: "A non-zero exit does not fail the node; check exit_code instead."},
		{Name: "max_output", Type: node.Int, Default: DefaultMaxOutput, Description: "Bytes kept of stdout and of stderr each; the rest is dropped, truncated.stdout or truncated.stderr is set and an output_truncated event is recorded."},
	},
	Outputs: []string{"stdout", "stderr", "exit_code", "json", "truncated"},
	Routes:  true,
	Check: func(p map[string]any) []node.ParamError {
		if n, ok := p["max_output"].(int); ok && n < 0 {
			return []node.ParamError{{Param: "max_output", Message: "max_output is negative; give the number of bytes to keep"}}
		}
		if env, ok := p["env"].(map[string]any); ok && !templated(env) {
			// What the run checks of an env written without templates.
			if _, _, err := environ(env); err != nil {
				return []node.ParamError{{Param: "env", Message: err.Error()}}
			}
		}
		sh, _ := p["shell"].(bool)
		if s, ok := p["shell"].(string); ok && expr.HasTemplate(s) {
			sh = true // known at run time only
		}
		switch c := p["command"].(type) {
		case []any:
			if len(c) == 0 {
				return []node.ParamError{{Param: "command", Message: "command is an empty list; give at least the program"}}
			}
			templ := false
			for i, a := range c {
				switch a := a.(type) {
				case string:
					templ = templ || expr.HasTemplate(a)
				case int, float64, bool:
				default:
					return []node.ParamError{{Param: fmt.Sprintf("command[%d]", i),
						Message: fmt.Sprintf("argument %d of command is %s; every element must be a string, number or boolean", i, describe(a))}}
				}
			}
			// What the run checks of a command written without templates
			// (an empty program, a NUL byte), the same code checks here.
			if !templ {
				if _, err := argv(c, sh); err != nil {
					return []node.ParamError{{Param: "command", Message: err.Error()}}
				}
			}
		case string:
			if !sh && !expr.HasTemplate(c) { // a template may give a list
				return []node.ParamError{{Param: "command", Message: "command is a string; write it as an argv list ([echo, hi]) or set shell: true to run it through /bin/sh"}}
			}
		default:
			return []node.ParamError{{Param: "command", Message: "command must be an argv list of strings"}}
		}
		return optionWarnings(p)
	},
}

// templated reports whether a map holds a template in a key or a value:
// it is known only at run time.
func templated(m map[string]any) bool {
	for k, v := range m {
		if expr.HasTemplate(k) {
			return true
		}
		if s, ok := v.(string); ok && expr.HasTemplate(s) {
			return true
		}
	}
	return false
}
