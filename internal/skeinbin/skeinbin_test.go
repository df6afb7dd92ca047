package skeinbin_test

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/skeinbin"
)

// TestBuild builds skein: a static binary (no program interpreter) that
// runs.
func TestBuild(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads the ELF headers of the binary")
	}
	bin := filepath.Join(t.TempDir(), "skein")
	require.NoError(t, skeinbin.Build(bin))
	exe, err := elf.Open(bin)
	require.NoError(t, err)
	defer exe.Close()
	for _, p := range exe.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "the binary is static, as make install builds it")
	}
	out, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(out), "skein "), "skein version answers: %q", out)
}
