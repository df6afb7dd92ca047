package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
)

// hundred is a workflow of 100 shell nodes: 10 chains of 10 that run side
// by side.
func hundred() string {
	var b strings.Builder
	b.WriteString("version: 1\nname: hundred\nnodes:\n")
	for c := range 10 {
		for i := range 10 {
			fmt.Fprintf(&b, "  - {id: n%d_%d, type: shell, command: [echo, \"%d.%d\"]}\n", c, i, c, i)
		}
	}
	b.WriteString("edges:\n")
	for c := range 10 {
		for i := 1; i < 10; i++ {
			fmt.Fprintf(&b, "  - {from: n%d_%d, to: n%d_%d}\n", c, i-1, c, i)
		}
	}
	return b.String()
}

// noop answers as a shell node would, in process.
type noop struct{}

func (noop) Run(context.Context, *node.Call) (map[string]any, error) {
	return map[string]any{"stdout": "x\n", "stderr": "", "exit_code": 0}, nil
}

// noopShells is the standard kinds with shell answered by noop.
func noopShells() *node.Registry {
	reg := node.NewRegistry()
	for _, s := range node.Default.Specs() {
		kind := s.Kind
		ctor := func() node.Kind { k, _ := node.Default.New(kind); return k }
		if kind == "shell" {
			ctor = func() node.Kind { return noop{} }
		}
		reg.MustRegister(*s, ctor)
	}
	return reg
}

// BenchmarkReplay is issue 18's acceptance 4: a replay of a recorded
// 100-node run (every node's command answered from the cassette) against
// the same run with in-process no-op nodes; both record every step in a
// SQLite store and a run folder. The target is cassette within 2× of noop.
func BenchmarkReplay(b *testing.B) {
	dir := b.TempDir()
	file := filepath.Join(dir, "hundred.yaml")
	require.NoError(b, os.WriteFile(file, []byte(hundred()), 0o644))
	start := func(b *testing.B, r *runner.Runner, o runner.Options) {
		w, err := r.Load(file)
		require.NoError(b, err)
		res, err := r.Start(context.Background(), runner.StartRequest{Workflow: w, Options: o})
		require.NoError(b, err)
		require.Equal(b, "completed", res.Run.Status)
	}

	rec, err := runner.Open(runner.Config{Dir: filepath.Join(dir, "rec")})
	require.NoError(b, err)
	w, err := rec.Load(file)
	require.NoError(b, err)
	res, err := rec.Start(context.Background(), runner.StartRequest{Workflow: w, Options: runner.Options{Record: true}})
	require.NoError(b, err)
	tape, err := cassette.Open(filepath.Join(res.Run.Dir, cassette.FileName))
	require.NoError(b, err)
	defer tape.Close()
	require.Equal(b, 100, tape.Len())
	require.NoError(b, rec.Close())

	b.Run("cassette", func(b *testing.B) {
		r, err := runner.Open(runner.Config{Dir: filepath.Join(b.TempDir(), ".skein")})
		require.NoError(b, err)
		defer r.Close()
		for b.Loop() {
			start(b, r, runner.Options{Replay: &runner.ReplaySource{Cassette: tape}})
		}
	})
	b.Run("noop", func(b *testing.B) {
		r, err := runner.Open(runner.Config{Dir: filepath.Join(b.TempDir(), ".skein"), Registry: noopShells()})
		require.NoError(b, err)
		defer r.Close()
		for b.Loop() {
			start(b, r, runner.Options{})
		}
	})
}
