//go:build unix

package shell_test

import (
	"context"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/nodes/shell"
	"github.com/skeinhq/skein/node"
)

// A script routes the run by printing a JSON object with _route: the kind
// puts the directive at the top of its result, where the engine reads it.
func ExampleShell_Run() {
	call := &node.Call{
		NodeID: "classify",
		Params: map[string]any{"command": []any{"echo", `{"_route": "urgent", "score": 9}`}},
		Emit:   func(string, map[string]any) {},
		Redact: func(s string) string { return s },
		Eval:   func(string) (any, error) { return nil, nil },
		Now:    time.Now,
	}
	out, err := (&shell.Shell{}).Run(context.Background(), call)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out["exit_code"], out["_route"], out["json"].(map[string]any)["score"])
	// Output: 0 urgent 9
}
