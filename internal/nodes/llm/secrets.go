package llm

import (
	"fmt"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/node"
)

// checkSecrets refuses a prompt, system prompt or message that reads a
// secret ({{ secrets.X }}): it would be sent to the model's provider, which
// is rarely meant. The node opts in with send_secrets: true. Only the
// parameters as written are looked at; a value that arrives through
// another node's output is not a reference.
func checkSecrets(p map[string]any) []node.ParamError {
	if b, _ := p["send_secrets"].(bool); b {
		return nil
	}
	var errs []node.ParamError
	check := func(param string, v any) {
		s, ok := v.(string)
		if !ok || !expr.HasTemplate(s) {
			return
		}
		t, err := expr.ParseTemplate(s)
		if err != nil {
			return // reported by the template checks
		}
		refs, err := t.References()
		if err != nil {
			return
		}
		for _, r := range refs {
			if r.Root == "secrets" {
				name := "a secret"
				if len(r.Path) > 0 {
					name = "secrets." + r.Path[0]
				}
				errs = append(errs, node.ParamError{Param: param, Message: fmt.Sprintf(
					"%s reads %s, which would be sent to the model's provider; set send_secrets: true on the node if that is meant", param, name)})
				return
			}
		}
	}
	check("prompt", p["prompt"])
	check("system", p["system"])
	if msgs, ok := p["messages"].([]any); ok {
		for i, m := range msgs {
			if mm, ok := m.(map[string]any); ok {
				check(fmt.Sprintf("messages[%d].content", i), mm["content"])
			}
		}
	}
	return errs
}
