package main_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProfiles: SKEIN_CPUPROFILE and SKEIN_MEMPROFILE make `skein run`
// write a CPU profile and a profile of what it allocated, for
// `go tool pprof`, and SKEIN_TRACE an execution trace for `go tool
// trace`; the run itself is not changed.
func TestProfiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cpu, mem, tr := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof"), filepath.Join(dir, "trace.out")
	cmd := exec.Command(bin, "run", "--dir", dir, "../../examples/hello.yaml", "-i", "who=Ada")
	cmd.Env = append(os.Environ(), "SKEIN_CPUPROFILE="+cpu, "SKEIN_MEMPROFILE="+mem, "SKEIN_TRACE="+tr)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "Hello, Ada")
	trace, err := os.ReadFile(tr)
	require.NoError(t, err)
	require.Regexp(t, `^go 1\.\d+ trace\x00`, string(trace[:min(len(trace), 16)]), "an execution trace begins with its header")
	require.Greater(t, len(trace), 1024, "the trace holds the run's events")
	for _, path := range []string{cpu, mem} {
		f, err := os.Open(path)
		require.NoError(t, err)
		zr, err := gzip.NewReader(f) // a pprof profile is a gzipped protocol buffer
		require.NoError(t, err, path)
		data, err := io.ReadAll(zr)
		require.NoError(t, err, path)
		require.NoError(t, f.Close())
		require.NotEmpty(t, data, path)
		if path == mem {
			require.True(t, bytes.Contains(data, []byte("alloc_space")), "an allocation profile names its sample types")
			require.True(t, bytes.Contains(data, []byte("skein/internal/engine.")), "the run's own allocations are in it, not only package initialisation's")
		}
	}
}
