package proc_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/proc"
)

func TestLookPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "tool"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "data"), []byte("x"), 0o644))

	p, err := proc.LookPath("tool", "", "relative:"+bin)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(bin, "tool"), p, "relative PATH entries are skipped, absolute ones searched")

	_, err = proc.LookPath("tool", "", "relative")
	require.ErrorIs(t, err, proc.ErrNotFound, "only the child's PATH counts")

	p, err = proc.LookPath("bin/tool", dir, "")
	require.NoError(t, err)
	require.Equal(t, "bin/tool", p, "a path is taken relative to the folder and returned as given")

	_, err = proc.LookPath("bin/data", dir, "")
	require.True(t, errors.Is(err, fs.ErrPermission), "not executable: %v", err)
	_, err = proc.LookPath("bin", dir, "")
	require.Error(t, err, "a folder is not a program")
}

func TestBase(t *testing.T) {
	t.Parallel()
	for k := range proc.Base() {
		require.Contains(t, proc.BaseEnv, k, "only the base variables are passed on")
	}
}

// This process is alive; a process id no process has is not.
func TestAlive(t *testing.T) {
	t.Parallel()
	require.True(t, proc.Alive(os.Getpid()))
	require.False(t, proc.Alive(0))
	require.False(t, proc.Alive(1<<22+7), "beyond pid_max")
}
