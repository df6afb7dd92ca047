package cassette_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/node"
)

// bigCassette writes a cassette of n shell interactions, node s<i> each,
// whose answers print size bytes, and returns its path. It is written one
// entry at a time: the test holds none of it.
func bigCassette(t testing.TB, n, size int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), cassette.FileName)
	fh, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(fh)
	enc := json.NewEncoder(w)
	require.NoError(t, enc.Encode(cassette.Header{Cassette: cassette.Version, Workflow: "big", RunID: "r-1"}))
	for i := range n {
		rec := cassette.NewRecorder(cassette.Header{RunID: "r-1"}, nil)
		_, err := cassette.Do(shellCall(i), rec, cassette.KindShell, shellRequest(i), func(context.Context) (map[string]any, error) {
			return map[string]any{"stdout": printed(i, size), "exit_code": 0}, nil
		})
		require.NoError(t, err)
		c, err := rec.Cassette()
		require.NoError(t, err)
		require.NoError(t, enc.Encode(c.Entries[0]))
	}
	require.NoError(t, w.Flush())
	require.NoError(t, fh.Close())
	return path
}

func shellCall(i int) context.Context {
	return node.WithCall(context.Background(), &node.Call{NodeID: fmt.Sprintf("s%d", i), Visit: 1, Attempt: 1})
}

func shellRequest(i int) map[string]any {
	return map[string]any{"argv": []string{"print", fmt.Sprint(i)}}
}

// printed is what command i prints: size bytes that name it.
func printed(i, size int) string {
	head := fmt.Sprintf("output %d ", i)
	return head + strings.Repeat("x", size-len(head))
}

// liveHeap is the heap in use once garbage is collected (twice: what a
// sync.Pool kept goes at the second).
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestReplayHoldsNoBodies is issue 28's bounded replay: a replay of a
// 32 MiB cassette holds its index and the entry it answers with, not the
// file — at most the largest entry twice (its line and its decoded
// answer) and 4 MiB more, measured as the live heap every 16 answers;
// and writing the replay's cassette copies the file through small
// buffers. Not parallel: the live heap is this test's alone.
func TestReplayHoldsNoBodies(t *testing.T) {
	const n, size = 256, 128 << 10
	path := bigCassette(t, n, size)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Greater(t, info.Size(), int64(n*size))

	base := liveHeap()
	f, err := cassette.Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, n, f.Len())
	require.Less(t, f.Largest(), int64(size+1024))
	require.LessOrEqual(t, f.IndexSize(), int64(n*cassette.SlotSize), "the index holds no request and no answer")

	bound := 2*f.Largest() + 4<<20
	held := liveHeap() - base
	require.Less(t, held, bound, "opened: the index only")
	play := f.Player("r-2", f.Header.StartedAt, nil, false)
	never := func(context.Context) (map[string]any, error) { t.Error("a replay ran a command"); return nil, nil }
	for j := range n {
		i := n - 1 - j // the other way round: matched by node, not by place
		out, err := cassette.Do(shellCall(i), play, cassette.KindShell, shellRequest(i), never)
		require.NoError(t, err)
		require.Equal(t, printed(i, size), out["stdout"])
		if j%16 == 15 {
			held = max(held, liveHeap()-base)
		}
	}
	require.Empty(t, play.Mismatches())
	require.Less(t, held, bound, "a replay of %d bytes held %d bytes at most", info.Size(), held)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out := filepath.Join(t.TempDir(), cassette.FileName)
	require.NoError(t, cassette.Save(play, filepath.Dir(out), ""))
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(bound), "the replay's cassette is copied through small buffers")
	copied, err := os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, info.Size(), copied.Size(), "the same cassette")
	runtime.KeepAlive(play)
}

// BenchmarkReplayFile replays a cassette of 1,000 answers of 64 KiB (64
// MiB on disk) from its file: open, answer each request, save the
// replay's cassette. held-B is the most the live heap grew by in a replay
// before the timed ones, sampled every 100 answers.
func BenchmarkReplayFile(b *testing.B) {
	const n, size = 1000, 64 << 10
	path := bigCassette(b, n, size)
	dir := b.TempDir()
	never := func(context.Context) (map[string]any, error) { b.Error("a replay ran a command"); return nil, nil }
	replay := func(sample func(i int)) {
		f, err := cassette.Open(path)
		require.NoError(b, err)
		play := f.Player("r-2", f.Header.StartedAt, nil, false)
		for i := range n {
			_, err := cassette.Do(shellCall(i), play, cassette.KindShell, shellRequest(i), never)
			require.NoError(b, err)
			sample(i)
		}
		require.NoError(b, cassette.Save(play, dir, ""))
		require.NoError(b, f.Close())
	}
	var held int64
	base := liveHeap()
	replay(func(i int) {
		if i%100 == 99 {
			held = max(held, liveHeap()-base)
		}
	})
	b.SetBytes(int64(n * size))
	for b.Loop() {
		replay(func(int) {})
	}
	b.ReportMetric(float64(held), "held-B")
}
