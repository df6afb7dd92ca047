package llm_test

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	nodellm "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/node"
)

// readable is a workflow folder with a declared assets/ folder, a run
// folder with one saved artifact, and a file outside both; assets/ also
// holds a symlink that leads to the outside file and a named pipe.
type readable struct {
	flows, assets, run, artifact, outside string
	files                                 *node.Files
}

func readableSetup(t *testing.T) *readable {
	t.Helper()
	tmp := t.TempDir()
	r := &readable{flows: filepath.Join(tmp, "flows"), run: filepath.Join(tmp, "runs", "r1")}
	r.assets = filepath.Join(r.flows, "assets")
	writeImage(t, r.assets, "logo.png")
	r.artifact = writeImage(t, filepath.Join(r.run, "shot", "artifacts"), "get-tiny-image-1.png")
	r.outside = writeImage(t, filepath.Join(tmp, "outside"), "secret.png")
	require.NoError(t, os.Symlink(r.outside, filepath.Join(r.assets, "out.png")))
	if runtime.GOOS != "windows" {
		require.NoError(t, syscall.Mkfifo(filepath.Join(r.assets, "pipe.png"), 0o644))
	}
	r.files = node.NewFiles(r.flows, "./assets", r.run)
	return r
}

// TestLLMImagesReadableFolders checks that an llm node sends an image from
// a folder of files: or from the run's folder, and refuses any other path —
// whether written in the workflow or taken from an upstream output — before
// anything reaches the provider.
func TestLLMImagesReadableFolders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		images func(r *readable) []any
		code   string // "" when the image is sent
		msg    string
	}{
		{name: "a declared folder, relative to the workflow", images: func(*readable) []any { return []any{"assets/logo.png"} }},
		{name: "an artifact in the run's folder", images: func(r *readable) []any {
			return []any{map[string]any{"path": r.artifact, "mime": "image/png"}}
		}},
		{
			name:   "an absolute path outside",
			images: func(*readable) []any { return []any{"/etc/passwd"} },
			code:   node.CodeFileNotAllowed, msg: `images[0]: "/etc/passwd" is outside the folders this workflow may read`,
		},
		{
			name:   "an mcp-style entry naming a path outside",
			images: func(*readable) []any { return []any{map[string]any{"path": "/etc/passwd", "mime": "image/png"}} },
			code:   node.CodeFileNotAllowed, msg: "add its folder to `files:` in the workflow",
		},
		{
			name:   "a ../ escape",
			images: func(*readable) []any { return []any{"assets/logo.png", "assets/../../outside/secret.png"} },
			code:   node.CodeFileNotAllowed, msg: `images[1]: "assets/../../outside/secret.png"`,
		},
		{
			name:   "a symlink inside a declared folder that leads out",
			images: func(*readable) []any { return []any{"assets/out.png"} },
			code:   node.CodeFileNotAllowed, msg: `"assets/out.png" leads to`,
		},
		{
			name:   "a folder",
			images: func(*readable) []any { return []any{"assets"} },
			code:   node.CodeFileNotAllowed, msg: "is a folder, not a regular file",
		},
		{
			name: "a named pipe",
			images: func(r *readable) []any {
				if runtime.GOOS == "windows" {
					return []any{"assets"}
				}
				return []any{"assets/pipe.png"}
			},
			code: node.CodeFileNotAllowed, msg: "not a regular file",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := readableSetup(t)
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("a logo")})
			b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI),
				map[string]any{"prompt": "What is this?", "images": tc.images(r)}, nil)
			b.call.Files = r.files
			out, err := b.run(t, nodellm.LLMKind{})
			if tc.code == "" {
				require.Nil(t, err, "the image is readable")
				require.Equal(t, "a logo", out["text"])
				require.Equal(t, 1, srv.Calls())
				require.Equal(t, []llm.Message{llm.User("What is this?", llm.Image{MIME: "image/png", Data: pngBytes})},
					srv.Last().Messages, "the provider received the image's bytes")
				return
			}
			require.NotNil(t, err, "the step must fail")
			require.Equal(t, tc.code, err.Code, err.Message)
			require.Equal(t, node.CategoryValidation, err.Category)
			require.Contains(t, err.Message, tc.msg)
			require.Zero(t, srv.Calls(), "nothing is sent to the provider")
			require.Empty(t, b.events.ofKind("llm_call"))
		})
	}
}
