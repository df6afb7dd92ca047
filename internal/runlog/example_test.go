package runlog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/runlog"
)

func ExampleOpen() {
	tmp, err := os.MkdirTemp("", "runlog-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)

	start := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	w, err := runlog.Open(filepath.Join(tmp, ".skein"), "hello", "run1", start, nil, nil)
	if err != nil {
		panic(err)
	}
	ev := engine.Event{Type: engine.EventNodeStarted, Node: "greet", Visit: 1}
	if err := w.Event(engine.TimedEvent{Time: start, Event: ev}); err != nil {
		panic(err)
	}
	if err := w.Finish(&engine.Result{RunID: "run1", Workflow: "hello", Status: engine.RunCompleted}); err != nil {
		panic(err)
	}

	rel, _ := filepath.Rel(tmp, w.Dir())
	fmt.Println(filepath.ToSlash(rel))
	line, _ := os.ReadFile(filepath.Join(w.Dir(), "events.jsonl"))
	fmt.Print(string(line))
	// Output:
	// .skein/runs/hello/2025-03-14_09-26-53_run1
	// {"time":"2025-03-14T09:26:53Z","type":"node_started","node":"greet","visit":1,"iteration":0}
}
