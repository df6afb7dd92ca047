package workflow_test

import (
	"fmt"

	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

func ExampleValidate() {
	src := []byte(`version: 1
name: typo
nodes:
  - {id: fetch, type: http, url: "https://example.com/items"}
  - {id: show, type: template, text: "{{ fetch.bdy }}"}
edges:
  - {from: fetch, to: show}
`)
	w, ds := workflow.Decode("typo.yaml", src)
	ds = append(ds, workflow.Validate(w, node.Default)...)
	for _, d := range ds {
		fmt.Println(d)
	}
	// Output:
	// typo.yaml:5:42: error: text reads fetch.bdy, but node "fetch" (http) has no output "bdy"; did you mean "body"? (its outputs: status, headers, body, truncated, success, error) (node show)
}
