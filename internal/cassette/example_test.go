package cassette_test

import (
	"context"
	"fmt"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/node"
)

// A node's interaction recorded, then answered by a replay without being
// made again.
func Example() {
	ctx := node.WithCall(context.Background(), &node.Call{NodeID: "roll", Visit: 1, Attempt: 1})
	req := map[string]any{"argv": []string{"roll-dice"}}

	rec := cassette.NewRecorder(cassette.Header{Workflow: "dice", RunID: "run-1"}, nil)
	n, _ := cassette.Do(ctx, rec, cassette.KindShell, req, func(context.Context) (int, error) { return 4, nil })
	fmt.Println("recorded:", n)

	recorded, _ := rec.Cassette()
	play := cassette.NewPlayer(recorded, "run-2", recorded.Header.StartedAt, nil, false)
	n, _ = cassette.Do(ctx, play, cassette.KindShell, req, func(context.Context) (int, error) { return 6, nil })
	fmt.Println("replayed:", n)

	// Another replay, of a node whose command changed.
	play = cassette.NewPlayer(recorded, "run-3", recorded.Header.StartedAt, nil, false)
	_, err := cassette.Do(ctx, play, cassette.KindShell, map[string]any{"argv": []string{"roll-dice", "--loaded"}},
		func(context.Context) (int, error) { return 6, nil })
	fmt.Println(err)
	// Output:
	// recorded: 4
	// replayed: 4
	// it (visit 1, attempt 1) made a shell request that differs from the recorded one:
	//   argv[1]: added "--loaded"
	// (skein replay --allow-new, or skein test --update for a test's cassette, sends such requests live and records the answers)
}
