package node_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
)

// filesBundle is a workflow folder with a declared assets/ folder, a run
// folder with one artifact, and a secret file outside both.
type filesBundle struct {
	base, assets, run, outside string
	files                      *node.Files
}

func filesSetup(t *testing.T) *filesBundle {
	t.Helper()
	tmp := t.TempDir()
	b := &filesBundle{
		base:    filepath.Join(tmp, "flows"),
		outside: filepath.Join(tmp, "outside"),
		run:     filepath.Join(tmp, "flows", ".skein", "runs", "f", "r1"),
	}
	b.assets = filepath.Join(b.base, "assets")
	write := func(path, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	write(filepath.Join(b.assets, "logo.png"), "logo")
	write(filepath.Join(b.assets, "sub", "deep.png"), "deep")
	write(filepath.Join(b.run, "shot", "artifacts", "shot-1.png"), "shot")
	write(filepath.Join(b.outside, "secret.txt"), "secret")
	write(filepath.Join(b.base, "notes.txt"), "not declared")
	require.NoError(t, os.Symlink(filepath.Join(b.outside, "secret.txt"), filepath.Join(b.assets, "out.png")))
	require.NoError(t, os.Symlink("logo.png", filepath.Join(b.assets, "alias.png")))
	require.NoError(t, os.Symlink(b.outside, filepath.Join(b.assets, "outdir")))
	// A declared folder that is itself a symlink is allowed where it leads.
	require.NoError(t, os.Symlink(filepath.Join(b.assets, "sub"), filepath.Join(b.base, "linked")))
	b.files = node.NewFiles(b.base, "./assets", "linked", b.run)
	return b
}

// TestFilesRead checks what a node may read: regular files under the
// declared folders and the run's folder, with relative paths taken from the
// workflow's folder; everything else is refused with a code and a message
// that says what to do.
func TestFilesRead(t *testing.T) {
	t.Parallel()
	b := filesSetup(t)
	tests := []struct {
		name string
		path string
		want string // content; "" when refused
		code string
		msg  string // in the message
	}{
		{name: "relative to the workflow's folder", path: "assets/logo.png", want: "logo"},
		{name: "dot-relative", path: "./assets/sub/deep.png", want: "deep"},
		{name: "dot-dot that stays inside", path: "assets/sub/../logo.png", want: "logo"},
		{name: "absolute inside a declared folder", path: filepath.Join(b.assets, "logo.png"), want: "logo"},
		{name: "an artifact in the run's folder", path: filepath.Join(b.run, "shot", "artifacts", "shot-1.png"), want: "shot"},
		{name: "a symlink that stays inside", path: "assets/alias.png", want: "logo"},
		{name: "through a declared folder that is a symlink", path: "linked/deep.png", want: "deep"},
		{
			name: "an absolute path outside", path: "/etc/passwd",
			code: node.CodeFileNotAllowed, msg: "add its folder to `files:` in the workflow",
		},
		{
			name: "a file of the workflow's folder that is not declared", path: "notes.txt",
			code: node.CodeFileNotAllowed, msg: "outside the folders this workflow may read",
		},
		{name: "a ../ escape", path: "../outside/secret.txt", code: node.CodeFileNotAllowed, msg: "outside the folders"},
		{name: "a ../ escape from a declared folder", path: "assets/../../outside/secret.txt", code: node.CodeFileNotAllowed, msg: "outside the folders"},
		{name: "a symlink inside that leads out", path: "assets/out.png", code: node.CodeFileNotAllowed, msg: "leads to " + filepath.Join(b.outside, "secret.txt")},
		{name: "a symlinked folder inside that leads out", path: "assets/outdir/secret.txt", code: node.CodeFileNotAllowed, msg: "leads to"},
		{name: "a folder", path: "assets", code: node.CodeFileNotAllowed, msg: "is a folder, not a regular file"},
		{name: "missing, inside", path: "assets/gone.png", code: node.CodeFileNotFound, msg: "does not exist"},
		{name: "missing, outside: not ours to tell", path: "/nonexistent/gone.png", code: node.CodeFileNotAllowed, msg: "outside the folders"},
		{name: "empty", path: "", code: node.CodeFileNotFound, msg: "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data, err := b.files.Read(tc.path)
			if tc.code == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, string(data))
				return
			}
			require.Nil(t, data, "nothing is read")
			var e *node.Error
			require.True(t, errors.As(err, &e), "a node error, got %v", err)
			require.Equal(t, tc.code, e.Code, e.Message)
			require.Equal(t, node.CategoryValidation, e.Category)
			require.Contains(t, e.Message, tc.msg)
			if tc.path != "" {
				require.Contains(t, e.Message, tc.path, "the message names the path")
			}
		})
	}
}

// TestFilesReadSpecial checks the files that are refused for what they are:
// a named pipe (which would block a plain open) and a file over the cap.
func TestFilesReadSpecial(t *testing.T) {
	t.Parallel()
	t.Run("named pipe", func(t *testing.T) {
		t.Parallel()
		if runtime.GOOS == "windows" {
			t.Skip("no named pipes in the file system")
		}
		b := filesSetup(t)
		require.NoError(t, syscall.Mkfifo(filepath.Join(b.assets, "pipe.png"), 0o644))
		_, err := b.files.Read("assets/pipe.png")
		e := node.AsError(err)
		require.NotNil(t, e)
		require.Equal(t, node.CodeFileNotAllowed, e.Code)
		require.Contains(t, e.Message, "a named pipe, not a regular file")
	})
	t.Run("over the cap", func(t *testing.T) {
		t.Parallel()
		b := filesSetup(t)
		big := filepath.Join(b.assets, "big.png")
		f, err := os.Create(big)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(node.MaxFileRead+1)) // sparse: no disk used
		require.NoError(t, f.Close())
		_, err = b.files.Read(big)
		e := node.AsError(err)
		require.NotNil(t, e)
		require.Equal(t, node.CodeFileTooLarge, e.Code)
		require.Contains(t, e.Message, "at most 20 MiB")

		exact := filepath.Join(b.assets, "exact.png")
		require.NoError(t, os.WriteFile(exact, make([]byte, node.MaxFileRead), 0o644))
		data, err := b.files.Read(exact)
		require.NoError(t, err, "a file of exactly the cap is read")
		require.Len(t, data, node.MaxFileRead)
	})
}

// TestFilesNone checks that a nil or zero policy allows nothing, with the
// same advice.
func TestFilesNone(t *testing.T) {
	t.Parallel()
	b := filesSetup(t)
	for name, f := range map[string]*node.Files{"nil": nil, "zero": {}, "no roots": node.NewFiles(b.base)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := f.Read(filepath.Join(b.assets, "logo.png"))
			e := node.AsError(err)
			require.NotNil(t, e)
			require.Equal(t, node.CodeFileNotAllowed, e.Code)
			require.Contains(t, e.Message, "none are declared")
		})
	}
}
