// A program that embeds Skein through its public packages only: it runs a
// workflow whose node fails, fixes the cause and resumes the run, then
// cancels a run whose node is still running. TestEmbeddingProgram builds
// it in a module of its own and checks what it prints.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/skeinhq/skein"
	"github.com/skeinhq/skein/node"
)

// ready is what the flaky kind needs; the program fixes it between the
// run and its resume.
var ready atomic.Bool

// flaky fails until ready is set.
type flaky struct{}

func (flaky) Run(_ context.Context, call *node.Call) (map[string]any, error) {
	if !ready.Load() {
		return nil, node.Failf(node.CategoryExecution, "not_ready", "the service is not ready")
	}
	return map[string]any{"answer": fmt.Sprintf("%v ready", call.Params["what"])}, nil
}

// block runs until its context ends, telling started which run it is in.
type block struct{ started chan<- string }

func (b block) Run(ctx context.Context, call *node.Call) (map[string]any, error) {
	b.started <- call.RunID
	<-ctx.Done()
	return nil, ctx.Err()
}

const flow = `
version: 1
name: embedded
nodes:
  - {id: start, type: trigger.manual}
  - id: prepare
    type: set
    values: {what: the service}
  - id: work
    type: demo.flaky
    what: "{{ prepare.what }}"
  - id: done
    type: template
    text: "{{ work.answer }}"
edges:
  - {from: start, to: prepare}
  - {from: prepare, to: work}
  - {from: work, to: done}
outputs:
  answer: "{{ done.text }}"
`

const slow = `
version: 1
name: slow
nodes:
  - {id: start, type: trigger.manual}
  - {id: hold, type: demo.block}
  - {id: after, type: template, text: never}
edges:
  - {from: start, to: hold}
  - {from: hold, to: after}
`

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	ctx := context.Background()
	started := make(chan string, 1)
	eng, err := skein.Open(skein.Config{
		Dir: filepath.Join(dir, ".skein"),
		Kinds: []skein.Kind{
			{Spec: node.Spec{Kind: "demo.flaky", Category: node.Action, Params: []node.Param{{Name: "what", Type: node.String}}, Outputs: []string{"answer"}},
				New: func() node.Kind { return flaky{} }},
			{Spec: node.Spec{Kind: "demo.block", Category: node.Action},
				New: func() node.Kind { return block{started: started} }},
		},
	})
	if err != nil {
		return err
	}
	defer eng.Close()

	flowFile := filepath.Join(dir, "flow.yaml")
	slowFile := filepath.Join(dir, "slow.yaml")
	if err := os.WriteFile(flowFile, []byte(flow), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(slowFile, []byte(slow), 0o644); err != nil {
		return err
	}

	// Run: the work node fails.
	doc, err := eng.Start(ctx, flowFile, nil, nil)
	if err != nil {
		return err
	}
	fmt.Println("run:", doc.Status, doc.Error.Code)
	id := doc.ExecutionID

	// Fix the cause and resume: prepare is reused, work runs again.
	ready.Store(true)
	doc, err = eng.Resume(ctx, id, nil)
	if err != nil {
		return err
	}
	fmt.Println("resume:", doc.Status, doc.ExecutionID == id, doc.Generation, doc.Outputs["answer"])
	for _, s := range doc.Steps {
		fmt.Printf("  %s %s reused=%v\n", s.Node, s.Status, s.Cached)
	}
	if _, err := eng.Resume(ctx, id, nil); !errors.Is(err, skein.ErrCompleted) {
		return fmt.Errorf("a second resume: %v, want ErrCompleted", err)
	}
	fmt.Println("resume again: refused, the run completed")

	// The events of the work node over both executions.
	for ev, err := range eng.Follow(ctx, id, 0) {
		if err != nil {
			return err
		}
		if ev.Node == "work" && ev.Type == skein.EventNodeFinished {
			fmt.Println("  event:", ev.Type, ev.Node, ev.Data["status"])
		}
	}

	// Cancel a run while its node runs.
	type result struct {
		doc *skein.RunDoc
		err error
	}
	done := make(chan result, 1)
	go func() {
		doc, err := eng.Start(ctx, slowFile, nil, nil)
		done <- result{doc, err}
	}()
	slowID := <-started
	if _, err := eng.Cancel(ctx, slowID, &skein.CancelOpts{Wait: time.Minute}); err != nil {
		return err
	}
	res := <-done
	if res.err != nil {
		return res.err
	}
	fmt.Println("cancel:", res.doc.Status, res.doc.ExecutionID == slowID)
	for _, s := range res.doc.Steps {
		fmt.Printf("  %s %s %s\n", s.Node, s.Status, s.SkipReason)
	}
	got, err := eng.Get(ctx, slowID)
	if err != nil {
		return err
	}
	fmt.Println("get:", got.Status)

	runs, err := eng.List(ctx, nil)
	if err != nil {
		return err
	}
	for _, r := range runs {
		fmt.Println("list:", r.Workflow, r.Status)
	}
	return nil
}
