package skein_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein"
	"github.com/skeinhq/skein/workflow"
)

// BenchmarkConcurrentRuns is 200 runs of a 10-node chain of `set` nodes
// started at once through the public API of an engine on a folder, each
// with its run folder and run document: what a program embedding Skein
// gets. steps/s counts the 10 nodes of each run.
//
//	go test -run '^$' -bench ConcurrentRuns -benchtime 5x .
func BenchmarkConcurrentRuns(b *testing.B) {
	const runs, nodes = 200, 10
	var src strings.Builder
	src.WriteString("version: 1\nname: chain10\nnodes:\n  - {id: start, type: trigger.manual}\n")
	for i := range nodes {
		fmt.Fprintf(&src, "  - {id: n%d, type: set, values: {i: %d}}\n", i, i)
	}
	src.WriteString("edges:\n  - {from: start, to: n0}\n")
	for i := 1; i < nodes; i++ {
		fmt.Fprintf(&src, "  - {from: n%d, to: n%d}\n", i-1, i)
	}
	w, diags := workflow.LoadSource("chain10.yaml", []byte(src.String()), nil)
	require.NoError(b, diags.Err())

	for _, onDemand := range []bool{false, true} {
		b.Run(fmt.Sprintf("folders-on-demand=%v", onDemand), func(b *testing.B) {
			concurrentRuns(b, w, onDemand, runs)
			b.ReportMetric(float64(b.N*runs*nodes)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

func concurrentRuns(b *testing.B, w *workflow.Workflow, onDemand bool, runs int) {
	eng, err := skein.Open(skein.Config{Dir: filepath.Join(b.TempDir(), ".skein"), FoldersOnDemand: onDemand})
	require.NoError(b, err)
	defer func() { require.NoError(b, eng.Close()) }()

	for b.Loop() {
		errs := make(chan error, runs)
		for range runs {
			go func() {
				doc, err := eng.StartWorkflow(b.Context(), w, nil, nil)
				if err == nil && doc.Status != skein.RunCompleted {
					err = fmt.Errorf("run %s ended %s", doc.ExecutionID, doc.Status)
				}
				errs <- err
			}()
		}
		for range runs {
			require.NoError(b, <-errs)
		}
	}
}
