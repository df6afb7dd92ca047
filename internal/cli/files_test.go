package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// TestLLMImagesFromUpstreamOutput runs, through `skein run`, a workflow
// that declares files: [./assets] and whose llm node sends the image named
// by an upstream node's output. An image in assets/ reaches the model
// (relative to the workflow's folder, not the working directory); any
// other path fails the node with file_not_allowed, and the model is never
// called.
func TestLLMImagesFromUpstreamOutput(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\nlogo")
	tests := []struct {
		name  string
		image string // the input the upstream node outputs as a path
		fifo  bool
		msg   string // "" when the image is sent
	}{
		{name: "an image in a declared folder", image: "assets/logo.png"},
		{name: "/etc/passwd", image: "/etc/passwd", msg: `"/etc/passwd" is outside the folders this workflow may read`},
		{name: "a ../ escape", image: "assets/../../secret.png", msg: `"assets/../../secret.png"`},
		{name: "a symlink in a declared folder that leads out", image: "assets/out.png", msg: `"assets/out.png" leads to`},
		{name: "a named pipe in a declared folder", image: "assets/pipe.png", fifo: true, msg: "a named pipe, not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.fifo && runtime.GOOS == "windows" {
				t.Skip("no named pipes in the file system")
			}
			dir := t.TempDir()
			flows := filepath.Join(dir, "flows")
			assets := filepath.Join(flows, "assets")
			require.NoError(t, os.MkdirAll(assets, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(assets, "logo.png"), png, 0o644))
			secret := filepath.Join(dir, "secret.png")
			require.NoError(t, os.WriteFile(secret, []byte("not for the model"), 0o644))
			require.NoError(t, os.Symlink(secret, filepath.Join(assets, "out.png")))
			if tc.fifo {
				require.NoError(t, syscall.Mkfifo(filepath.Join(assets, "pipe.png"), 0o644))
			}
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("a logo")})
			flow := filepath.Join(flows, "images.yaml")
			require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: images
files: [./assets]
inputs:
  image: {type: string, required: true}
`+llmSection(srv)+`nodes:
  - {id: pick, type: set, values: {path: "{{ inputs.image }}"}}
  - id: look
    type: llm
    prompt: What is this?
    images: ["{{ pick.path }}"]
edges:
  - {from: pick, to: look}
outputs:
  answer: "{{ look.text }}"
`), 0o644))

			r := skein(t, "run", "--output", "json", "--dir", filepath.Join(dir, ".skein"), flow, "-i", "image="+tc.image)
			res := decodeAIRun(t, r)
			if tc.msg == "" {
				require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
				require.Equal(t, "a logo", res.Outputs["answer"])
				require.Equal(t, 1, srv.Calls())
				sent := srv.Last().Messages[0].Images
				require.Len(t, sent, 1)
				require.Equal(t, png, sent[0].Data, "the model received the image's bytes")
				return
			}
			require.Equal(t, 1, r.code, "the run fails: %s", r.stdout)
			require.Equal(t, "failed", string(res.Status))
			look := res.Steps[res.step(t, "look")]
			require.Equal(t, "failed", string(look.Status))
			require.Equal(t, "file_not_allowed", look.Error.Code)
			require.Equal(t, "validation", look.Error.Category)
			require.NotNil(t, res.Error)
			require.Contains(t, res.Error.Message, tc.msg)
			if !tc.fifo {
				require.Contains(t, res.Error.Message, "add its folder to `files:` in the workflow")
			}
			require.Zero(t, srv.Calls(), "nothing is sent to the provider")
		})
	}
}

// TestMCPImageReadByLLM checks that an image an mcp node saved in the run's
// folder is readable by a downstream llm node without any files:, with the
// run folder outside the workflow's folder and the working directory.
func TestMCPImageReadByLLM(t *testing.T) {
	t.Parallel()
	everything, err := filepath.Abs(filepath.Join("..", "mcp", "testdata", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	require.NoError(t, err)
	if _, err := exec.LookPath("node"); err != nil {
		aiMissing(t, "node is not in PATH")
	}
	if _, err := os.Stat(everything); err != nil {
		aiMissing(t, everything+" is missing")
	}
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("a tiny logo")})
	flow := filepath.Join(t.TempDir(), "look.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: look
mcp_servers:
  ev: {command: node, args: ["`+everything+`", stdio]}
`+llmSection(srv)+`nodes:
  - {id: shot, type: mcp, server: ev, tool: get-tiny-image}
  - id: look
    type: llm
    prompt: Describe the image.
    images: "{{ shot.images }}"
edges:
  - {from: shot, to: look}
outputs:
  answer: "{{ look.text }}"
`), 0o644))
	runs := t.TempDir()
	r := skein(t, "run", "--output", "json", "--dir", runs, flow)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	res := decodeAIRun(t, r)
	require.Equal(t, "a tiny logo", res.Outputs["answer"])

	saved, _ := filepath.Glob(filepath.Join(runs, "runs", "look", "*", "shot", "artifacts", "*.png"))
	require.Len(t, saved, 1, "the mcp node saved the image in the run's folder")
	data, err := os.ReadFile(saved[0])
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, []byte("\x89PNG")))
	require.Equal(t, 1, srv.Calls())
	sent := srv.Last().Messages[0].Images
	require.Len(t, sent, 1)
	require.Equal(t, data, sent[0].Data, "the model received the saved image")
}

// TestSubworkflowReadsItsOwnFiles checks that a child workflow's llm node
// reads images from the child's files:, relative to the child's folder.
func TestSubworkflowReadsItsOwnFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pics := filepath.Join(dir, "child", "pics")
	require.NoError(t, os.MkdirAll(pics, 0o755))
	png := []byte("\x89PNG\r\n\x1a\nchild")
	require.NoError(t, os.WriteFile(filepath.Join(pics, "a.png"), png, 0o644))
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("seen")})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "child", "child.yaml"), []byte(`version: 1
name: child
files: [./pics]
`+llmSection(srv)+`nodes:
  - {id: look, type: llm, prompt: Look., images: [pics/a.png]}
outputs:
  text: "{{ look.text }}"
`), 0o644))
	parent := filepath.Join(dir, "parent.yaml")
	require.NoError(t, os.WriteFile(parent, []byte(`version: 1
name: parent
nodes:
  - {id: call, type: subworkflow, workflow: child/child.yaml}
outputs:
  text: "{{ call.text }}"
`), 0o644))
	r := skein(t, "run", "--output", "json", "--dir", filepath.Join(dir, ".skein"), parent)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Equal(t, "seen", decodeAIRun(t, r).Outputs["text"])
	require.Equal(t, png, srv.Last().Messages[0].Images[0].Data)
}
