package workflow

import (
	"fmt"
	"strings"
)

// BigYAML is bigYAML for the external benchmarks.
var BigYAML = bigYAML

// bigYAML generates the n-node workflow of the YAML benchmarks: a chain of
// shell, template and set nodes, each reading the one before it.
func bigYAML(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nname: big\nnodes:\n  - id: n0\n    type: trigger.manual\n")
	for i := 1; i < n; i++ {
		id, prev := fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", i-1)
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "  - id: %s\n    type: shell\n    command: [echo, \"{{ %s.success }}\"]\n    timeout: 5s\n", id, prev)
		case 1:
			fmt.Fprintf(&b, "  - id: %s\n    type: template\n    text: \"step %s after {{ %s.success }}\"\n", id, id, prev)
		case 2:
			fmt.Fprintf(&b, "  - id: %s\n    type: set\n    values:\n      v: \"{{ %s.text }}\"\n      n: %d\n", id, prev, i)
		}
	}
	b.WriteString("edges:\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - {from: n%d, to: n%d}\n", i-1, i)
	}
	return []byte(b.String())
}
