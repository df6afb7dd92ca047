package durable_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/internal/store/sqlite"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

func chainPlan(b *testing.B, n int) *engine.Plan {
	var sb strings.Builder
	sb.WriteString("version: 1\nname: chain\nnodes:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "  - {id: n%d, type: set, values: {i: %d}}\n", i, i)
	}
	sb.WriteString("edges:\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&sb, "  - {from: n%d, to: n%d}\n", i-1, i)
	}
	w, ds := workflow.Decode("chain.yaml", []byte(sb.String()))
	if w == nil || workflow.Validate(w, node.Default).HasErrors() {
		b.Fatal(ds.Error())
	}
	p, err := engine.NewPlan(w, node.Default)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkChain400 runs a chain of 400 no-op nodes in memory and with
// every step group-committed to SQLite and to Postgres, and reports ns per node and step
// completions per second.
func BenchmarkChain400(b *testing.B) {
	const n = 400
	plan := chainPlan(b, n)
	d := engine.NewDriver(node.Default, nil, 0)
	b.Run("memory", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			res, err := d.Execute(context.Background(), plan, engine.Options{RunID: fmt.Sprint("r", i)})
			if err != nil || res.Status != engine.RunCompleted {
				b.Fatal(err, res.Error)
			}
		}
		report(b, n)
	})
	for name, open := range benchStores {
		b.Run(name, func(b *testing.B) {
			st := open(b)
			ctx := context.Background()
			c := durable.NewCommitter(st)
			defer c.Close()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				id := fmt.Sprint("r", i)
				if err := st.CreateRun(ctx, &store.Run{ID: id, Workflow: "chain", Status: "running"}); err != nil {
					b.Fatal(err)
				}
				rec := durable.NewRecorder(c, id, nil, nil)
				res, err := d.Execute(ctx, plan, engine.Options{RunID: id, Host: engine.Host{Recorder: rec}})
				if err != nil || res.Status != engine.RunCompleted {
					b.Fatal(err, res.Error)
				}
				if err := rec.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			report(b, n)
		})
	}
}

// benchStores open an empty store of each kind for a benchmark, closed
// with it. The Postgres one is skipped without a server (pgtest).
var benchStores = map[string]func(b *testing.B) store.Store{
	"sqlite": func(b *testing.B) store.Store {
		st, err := sqlite.Open(filepath.Join(b.TempDir(), "skein.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	},
	"postgres": func(b *testing.B) store.Store {
		st, err := postgres.Open(b.Context(), pgtest.URL(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	},
}

func report(b *testing.B, nodes int) {
	perNode := float64(b.Elapsed().Nanoseconds()) / float64(b.N*nodes)
	b.ReportMetric(perNode, "ns/node")
	b.ReportMetric(1e9/perNode, "steps/s")
}

// BenchmarkConcurrentRuns runs 200 runs of a 10-node workflow at once
// through one driver, in memory and recorded in SQLite or Postgres through one
// committer, and reports step completions per second.
func BenchmarkConcurrentRuns(b *testing.B) {
	const runs, nodes = 200, 10
	plan := chainPlan(b, nodes)
	d := engine.NewDriver(node.Default, nil, 0)
	execAll := func(b *testing.B, rec func(id string) (engine.Recorder, func() error)) {
		errs := make(chan error, runs)
		for r := 0; r < runs; r++ {
			go func(r int) {
				id := fmt.Sprintf("b%d-%d", b.N, r)
				var rc engine.Recorder
				sync := func() error { return nil }
				if rec != nil {
					rc, sync = rec(id)
				}
				res, err := d.Execute(context.Background(), plan, engine.Options{RunID: id, Host: engine.Host{Recorder: rc}})
				if err == nil && res.Status != engine.RunCompleted {
					err = fmt.Errorf("run %s: %v", id, res.Error)
				}
				if err == nil {
					err = sync()
				}
				errs <- err
			}(r)
		}
		for r := 0; r < runs; r++ {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("memory", func(b *testing.B) {
		for b.Loop() {
			execAll(b, nil)
		}
		report(b, runs*nodes)
	})
	for name, open := range benchStores {
		b.Run(name, func(b *testing.B) {
			st := open(b)
			c := durable.NewCommitter(st)
			defer c.Close()
			ctx := context.Background()
			n := 0
			for b.Loop() {
				n++
				execAll(b, func(id string) (engine.Recorder, func() error) {
					id = fmt.Sprintf("%s-%d", id, n)
					if err := st.CreateRun(ctx, &store.Run{ID: id, Workflow: "chain", Status: "running"}); err != nil {
						b.Fatal(err)
					}
					rec := durable.NewRecorder(c, id, nil, nil)
					return rec, rec.Sync
				})
			}
			report(b, runs*nodes)
		})
	}
}
