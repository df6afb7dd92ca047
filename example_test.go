package skein_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/skeinhq/skein"
	"github.com/skeinhq/skein/node"
)

// writeFile writes a workflow (or any file) into dir and returns its path.
func writeFile(dir, name, src string) string {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		log.Fatal(err)
	}
	return path
}

// Run a workflow file and read its outputs.
func ExampleEngine_Start() {
	dir, err := os.MkdirTemp("", "skein-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := writeFile(dir, "hello.yaml", `
version: 1
name: hello
inputs:
  who: {type: string, default: world}
nodes:
  - {id: start, type: trigger.manual}
  - id: greet
    type: template
    text: "Hello, {{ inputs.who }}!"
  - id: measure
    type: set
    values: {length: "{{ len(inputs.who) }}"}
edges:
  - {from: start, to: greet}
  - {from: greet, to: measure}
outputs:
  greeting: "{{ greet.text }}"
  length: "{{ measure.length }}"
`)

	eng, err := skein.Open(skein.Config{Dir: filepath.Join(dir, ".skein")})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()

	ctx := context.Background()
	doc, err := eng.Start(ctx, file, map[string]any{"who": "Ada"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(doc.Status)
	fmt.Println(doc.Outputs["greeting"], doc.Outputs["length"])

	// The run is recorded: Get reads the same document back.
	again, err := eng.Get(ctx, doc.ExecutionID)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range again.Steps {
		fmt.Println(s.Node, s.Status)
	}
	// Output:
	// completed
	// Hello, Ada! 3
	// start success
	// greet success
	// measure success
}

// shout is a node kind of the program: it upper-cases its text.
type shout struct{}

func (shout) Run(ctx context.Context, call *node.Call) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, node.AsError(err) // a kind ends its call when its context ends
	}
	text, _ := call.Params["text"].(string)
	return map[string]any{"text": strings.ToUpper(text) + "!"}, nil
}

// shoutKind is the kind as a program gives it to the engine.
var shoutKind = skein.Kind{
	Spec: node.Spec{
		Kind:        "acme.shout",
		Category:    node.Action,
		Description: "Upper-cases a text.",
		Params:      []node.Param{{Name: "text", Type: node.String, Required: true, Description: "The text to shout."}},
		Outputs:     []string{"text"},
	},
	New: func() node.Kind { return shout{} },
}

// Register a node kind of your own and use it in a workflow beside the
// built-in kinds.
func ExampleKind() {
	dir, err := os.MkdirTemp("", "skein-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := writeFile(dir, "shout.yaml", `
version: 1
name: shout
inputs:
  who: {type: string}
nodes:
  - {id: start, type: trigger.manual}
  - id: greet
    type: template
    text: "hello, {{ inputs.who }}"
  - id: loud
    type: acme.shout
    text: "{{ greet.text }}"
edges:
  - {from: start, to: greet}
  - {from: greet, to: loud}
outputs:
  said: "{{ loud.text }}"
`)

	eng, err := skein.Open(skein.Config{
		Dir:   filepath.Join(dir, ".skein"),
		Kinds: []skein.Kind{shoutKind},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()

	doc, err := eng.Start(context.Background(), file, map[string]any{"who": "Grace"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(doc.Status, doc.Outputs["said"])
	// Output:
	// completed HELLO, GRACE!
}

// Resume a failed run once the cause is fixed: the steps that succeeded
// are reused, not run again (the trigger starts the execution each time).
func ExampleEngine_Resume() {
	dir, err := os.MkdirTemp("", "skein-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "config.txt") // not there yet
	file := writeFile(dir, "report.yaml", `
version: 1
name: report
inputs:
  config: {type: string}
nodes:
  - {id: start, type: trigger.manual}
  - id: fetch
    type: set
    values: {rows: 42}
  - id: read_config
    type: shell
    command: [cat, "{{ inputs.config }}"]
  - id: report
    type: template
    text: "{{ fetch.rows }} rows for {{ trim(read_config.stdout) }}"
edges:
  - {from: start, to: fetch}
  - {from: fetch, to: read_config}
  - {from: read_config, to: report}
outputs:
  report: "{{ report.text }}"
`)

	eng, err := skein.Open(skein.Config{Dir: filepath.Join(dir, ".skein")})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()

	doc, err := eng.Start(ctx, file, map[string]any{"config": config}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first:", doc.Status)
	for _, s := range doc.Steps {
		if s.Status == skein.StatusFailed {
			fmt.Println("failed:", s.Node, s.Error.Code)
		}
	}

	// Fix the cause, then resume the same run.
	writeFile(dir, "config.txt", "team A\n")
	doc, err = eng.Resume(ctx, doc.ExecutionID, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("resumed:", doc.Status, doc.Outputs["report"])
	for _, s := range doc.Steps {
		fmt.Printf("%s %s reused=%v\n", s.Node, s.Status, s.Cached)
	}
	// Output:
	// first: failed
	// failed: read_config exit_code
	// resumed: completed 42 rows for team A
	// start success reused=false
	// fetch success reused=true
	// read_config success reused=false
	// report success reused=false
}

// Start a run that waits for a person's approval, then send it: the run
// goes on from where it waited.
func ExampleEngine_Signal() {
	dir, err := os.MkdirTemp("", "skein-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := writeFile(dir, "approval.yaml", `
version: 1
name: approval
nodes:
  - {id: start, type: trigger.manual}
  - {id: approve, type: wait, until: signal, timeout: 24h}
  - id: send
    type: template
    text: "sent, approved by {{ approve.data.by }}"
edges:
  - {from: start, to: approve}
  - {from: approve, to: send}
outputs:
  result: "{{ send.text }}"
`)
	eng, err := skein.Open(skein.Config{Dir: filepath.Join(dir, ".skein")})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()

	doc, err := eng.Start(ctx, file, nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(doc.Status) // Start returned: nothing runs while the run waits

	doc, err = eng.Signal(ctx, doc.ExecutionID, "approve", map[string]any{"by": "Grace"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(doc.Status, doc.Outputs["result"])

	// The approve node's events over both executions: it waited, the
	// execution ended; the signal resumed the run, which applied it.
	for ev, err := range eng.Follow(ctx, doc.ExecutionID, 0) {
		if err != nil {
			log.Fatal(err)
		}
		if ev.Node == "approve" {
			fmt.Println(ev.Type, ev.Node)
		}
	}
	// Output:
	// waiting
	// completed sent, approved by Grace
	// node_started approve
	// signal_awaited approve
	// node_started approve
	// signal_awaited approve
	// signal_received approve
	// node_finished approve
}
