package edit_test

import (
	"encoding/json"
	"fmt"

	"github.com/skeinhq/skein/workflow/edit"
)

// Apply changes a value, adds a node and connects it; the comments, the
// quoting and the layout of everything else stay as written.
func ExampleApply() {
	src := []byte(`version: 1
name: greet
nodes:
  - id: start
    type: trigger.manual
  # says hello
  - id: hello
    type: template
    text: "Hello, {{ inputs.name }}"   # shown to the user
edges:
  - {from: start, to: hello}
`)
	out, err := edit.Apply(src, "greet.yaml", []edit.Op{
		{Op: "set", Node: "hello", Path: []string{"text"}, Value: json.RawMessage(`"Hi, {{ inputs.name }}"`)},
		{Op: "add_node", Value: json.RawMessage(`{"id": "log", "type": "shell", "command": ["echo", "done: ok"]}`)},
		{Op: "connect", Node: "hello", To: "log"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))

	_, err = edit.Apply(src, "greet.yaml", []edit.Op{{Op: "connect", Node: "hello", To: "helo"}})
	fmt.Println(err)
	// Output:
	// version: 1
	// name: greet
	// nodes:
	//   - id: start
	//     type: trigger.manual
	//   # says hello
	//   - id: hello
	//     type: template
	//     text: "Hi, {{ inputs.name }}"   # shown to the user
	//   - id: log
	//     type: shell
	//     command:
	//       - echo
	//       - 'done: ok'
	// edges:
	//   - {from: start, to: hello}
	//   - {from: hello, to: log}
	// op 0 (connect "hello"): no node "helo" in the file; the nodes are start, hello
}
