package runner_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
)

// lastStep returns the latest step of node id in a run's document.
func lastStep(t *testing.T, b *bundle, runID, id string) *runner.StepDoc {
	t.Helper()
	doc, err := b.r.Get(b.ctx, runID)
	require.NoError(t, err)
	var got *runner.StepDoc
	for i := range doc.Steps {
		if doc.Steps[i].Node == id {
			got = &doc.Steps[i]
		}
	}
	require.NotNil(t, got, "no step of %s", id)
	return got
}

// TestTemplateErrorCarriesItsContext: a template that reads a key its
// object lacks fails its step with an error that names the node, says it
// is a template's (fixable by an edit) and lists the object's keys; the
// run's error says the same.
func TestTemplateErrorCarriesItsContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "typo.yaml", `version: 1
name: typo
nodes:
  - {id: fetch, type: shell, command: [echo, '{"items": [1, 2], "total": 2}']}
  - {id: show, type: template, text: "{{ upper(fetch.json.itemz) }}"}
edges:
  - {from: fetch, to: show}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))

	e := lastStep(t, b, res.Run.ID, "show").Error
	require.NotNil(t, e)
	require.Equal(t, "show", e.Node)
	require.Equal(t, node.SourceTemplate, e.Source)
	require.True(t, e.Fixable, "a template an edit can correct")
	require.Equal(t, "template", e.Code)
	require.Equal(t, "fetch.json.itemz", e.Details["missing"])
	require.Equal(t, []any{"items", "total"}, e.Details["available_fields"],
		"the keys of the object that lacked itemz, sorted")

	got, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.NotNil(t, got.Error)
	require.Equal(t, "show", got.Error.Node, "the run's error names the node it came from")
	require.Equal(t, node.SourceTemplate, got.Error.Source)
	require.True(t, got.Error.Fixable)
	validateDoc(t, compileSchema(t), got)
}

// TestRuntimeErrorContext: a command that fails is a runtime error of its
// node; a timeout is one an edit does not cure.
func TestRuntimeErrorContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "slow.yaml", `version: 1
name: slow
nodes:
  - {id: broken, type: shell, command: [sh, -c, 'exit 3'], on_error: continue}
  - {id: slow, type: shell, command: [sh, -c, 'exec sleep 30'], timeout: 50ms}
edges:
  - {from: broken, to: slow}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))

	broken := lastStep(t, b, res.Run.ID, "broken").Error
	require.NotNil(t, broken)
	require.Equal(t, "broken", broken.Node)
	require.Equal(t, node.SourceRuntime, broken.Source)
	require.True(t, broken.Fixable, "%s errors are repaired", broken.Category)

	slow := lastStep(t, b, res.Run.ID, "slow").Error
	require.NotNil(t, slow)
	require.Equal(t, "slow", slow.Node)
	require.Equal(t, node.SourceRuntime, slow.Source)
	require.Equal(t, node.CategoryTimeout, slow.Category)
	require.False(t, slow.Fixable, "a timeout is not cured by an edit")
}

// TestLongErrorMessageIsCut: a message over 2,000 characters is stored cut
// there, its secrets masked first, and the whole masked text is kept in a
// blob the message and the details name.
func TestLongErrorMessageIsCut(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-t0ken"
	b := setupEnv(t, map[string]string{"TOKEN": secret})
	// The secret straddles the cut: masked first, no part of it is kept.
	w, err := b.r.Load(b.write(t, "loud.yaml", `version: 1
name: loud
secrets: [TOKEN]
nodes:
  - {id: loud, type: fail, message: "{{ repeat('é', 1995) }}{{ secrets.TOKEN }}{{ repeat('y', 3000) }}"}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))

	e := lastStep(t, b, res.Run.ID, "loud").Error
	require.NotNil(t, e)
	kept, marker, ok := strings.Cut(e.Message, "… (cut; whole message in blob ")
	require.True(t, ok, "the message says it was cut: %.100q…", e.Message)
	require.Equal(t, 2000, utf8.RuneCountInString(kept), "cut at 2,000 characters")
	require.Equal(t, strings.Repeat("é", 1995)+"***"+"yy", kept)
	require.NotContains(t, e.Message, secret[:3])

	ref, ok := e.Details["message_blob"].(*blob.Blob)
	require.True(t, ok, "details.message_blob refers to the whole message: %#v", e.Details["message_blob"])
	require.Contains(t, marker, ref.Path())
	whole, err := ref.Load()
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("é", 1995)+"***"+strings.Repeat("y", 3000), whole)

	got, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Contains(t, got.Error.Message, "… (cut; whole message in blob ", "the run's error is the cut one")
	require.NotContains(t, got.Error.Message, secret[:3])
	validateDoc(t, compileSchema(t), got)
}
