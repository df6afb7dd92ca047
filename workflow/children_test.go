package workflow_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// writerIn returns a function that writes a file of dir and returns its
// path.
func writerIn(t *testing.T, dir string) func(name, src string) string {
	return func(name, src string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
		return path
	}
}

// A child workflow is validated with the workflow that runs it: a child
// that is not valid, one that runs a workflow of its own chain (the
// engine refuses every recursion) and inputs the child does not take, or
// lacks, fail the node each time it runs, so validate reports them at the
// node, with the child's own problems under it.
func TestChildWorkflowsAreValidatedWithTheirParent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := writerIn(t, dir)
	calls := func(name, child string) string {
		return "version: 1\nname: " + name + "\nnodes:\n  - {id: start, type: trigger.manual}\n  - {id: go, type: subworkflow, workflow: " + child + "}\nedges:\n  - {from: start, to: go}\n"
	}
	write("kid.yaml", "version: 1\nname: kid\ninputs:\n  n: {type: integer, required: true}\n  who: {type: string, default: x}\n  maybe: {type: string}\nnodes:\n  - {id: out, type: set, values: {m: \"{{ inputs.n }}\"}}\n")
	write("broken.yaml", "version: 1\nname: broken\nnodes:\n  - {id: x, type: nope}\n")
	write("deep.yaml", calls("deep", "broken.yaml"))
	write("ping.yaml", calls("ping", "pong.yaml"))
	write("pong.yaml", calls("pong", "ping.yaml"))
	write("alone.yaml", calls("alone", "alone.yaml"))

	only := func(t *testing.T, file string) workflow.Diagnostic {
		t.Helper()
		_, ds := workflow.Load(filepath.Join(dir, file), node.Default)
		require.Len(t, ds.Errors(), 1, ds.Error())
		d := ds.Errors()[0]
		require.Equal(t, "go", d.Node)
		require.Equal(t, 5, d.Line, d.String())
		return d
	}
	t.Run("a child that runs itself", func(t *testing.T) {
		d := only(t, "alone.yaml")
		require.Equal(t, `child workflow "alone.yaml" is a workflow that runs this one (alone.yaml → alone.yaml): a workflow cannot run itself as a child, even through others`, d.Message)
	})
	t.Run("two that run each other", func(t *testing.T) {
		d := only(t, "ping.yaml")
		require.Equal(t, filepath.Join(dir, "ping.yaml")+":5:43: error: child workflow \"pong.yaml\" is not valid, so the node would fail each time it runs (node go)\n"+
			"  "+filepath.Join(dir, "pong.yaml")+":5:43: error: child workflow \"ping.yaml\" is a workflow that runs this one (ping.yaml → pong.yaml → ping.yaml): a workflow cannot run itself as a child, even through others (node go)",
			d.String())
	})
	t.Run("a grandchild that is not valid", func(t *testing.T) {
		d := only(t, "deep.yaml")
		require.Contains(t, d.String(), "deep.yaml:5:43: error: child workflow \"broken.yaml\" is not valid, so the node would fail each time it runs (node go)\n"+
			"  "+filepath.Join(dir, "broken.yaml")+":4:19: error: unknown node type \"nope\"")
	})
	t.Run("inputs", func(t *testing.T) {
		path := write("parent.yaml", `version: 1
name: parent
nodes:
  - {id: start, type: trigger.manual}
  - {id: none, type: subworkflow, workflow: kid.yaml}
  - {id: wrong, type: subworkflow, workflow: kid.yaml, inputs: {n: "five", whom: y}}
  - {id: rendered, type: subworkflow, workflow: kid.yaml, inputs: {n: "{{ 1 + 1 }}"}}
  - {id: whole, type: subworkflow, workflow: kid.yaml, inputs: "{{ {'n': 1} }}"}
  - {id: float, type: subworkflow, workflow: kid.yaml, inputs: {n: 3.0, maybe: null}}
  - {id: idle, type: subworkflow, workflow: kid.yaml, disabled: true}
edges:
  - {from: start, to: none}
  - {from: start, to: wrong}
  - {from: start, to: rendered}
  - {from: start, to: whole}
  - {from: start, to: float}
  - {from: start, to: idle}
`)
		_, ds := workflow.Load(path, node.Default)
		var got []string
		for _, d := range ds.Errors() {
			got = append(got, d.String())
		}
		require.Equal(t, []string{
			path + `:5:6: error: child workflow "kid.yaml" needs input n, which the node does not give; add it to the node's inputs (node none)`,
			path + `:6:68: error: input "n" of child workflow "kid.yaml" must be an integer, not string "five" (node wrong)`,
			path + `:6:82: error: child workflow "kid.yaml" takes no input "whom"; did you mean "who"? (its inputs: n, who, maybe) (node wrong)`,
		}, got, "a template, a whole number written 3.0 and a null for an optional input are let through; a disabled node's problem is a warning")
	})
}

// A child reached through a symlink is the file the link leads to: a
// workflow that runs a link to itself runs itself.
func TestChildWorkflowThroughASymlinkIsItsTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := "version: 1\nname: loopy\nnodes:\n  - {id: start, type: trigger.manual}\n  - {id: go, type: subworkflow, workflow: link.yaml}\nedges:\n  - {from: start, to: go}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "loopy.yaml"), []byte(src), 0o644))
	require.NoError(t, os.Symlink("loopy.yaml", filepath.Join(dir, "link.yaml")))
	_, ds := workflow.Load(filepath.Join(dir, "loopy.yaml"), node.Default)
	require.Len(t, ds.Errors(), 1, ds.Error())
	require.Equal(t, `child workflow "link.yaml" is a workflow that runs this one (loopy.yaml → loopy.yaml): a workflow cannot run itself as a child, even through others`, ds.Errors()[0].Message)
}

// TestChildWorkflowsNestAtMostTenDeep: a chain of subworkflows deeper
// than a run allows (MaxChildDepth below the workflow the run starts
// with) is refused at the node that would start the level too many; one
// level less is valid. ValidateOwn does not read the children.
func TestChildWorkflowsNestAtMostTenDeep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	last := workflow.MaxChildDepth + 1
	for n := 0; n <= last; n++ {
		src := fmt.Sprintf("version: 1\nname: level%d\nnodes:\n  - {id: here, type: set, values: {n: %d}}\n", n, n)
		if n < last {
			src = fmt.Sprintf("version: 1\nname: level%d\nnodes:\n  - {id: next, type: subworkflow, workflow: level%d.yaml}\n", n, n+1)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("level%d.yaml", n)), []byte(src), 0o644))
	}
	_, ds := workflow.Load(filepath.Join(dir, "level1.yaml"), node.Default)
	require.False(t, ds.HasErrors(), "%d levels below: %v", workflow.MaxChildDepth, ds)
	w, ds := workflow.Load(filepath.Join(dir, "level0.yaml"), node.Default)
	require.Len(t, ds.Errors(), 1)
	require.Contains(t, ds.Error(), fmt.Sprintf(`level%d.yaml:4:45: error: child workflow "level%d.yaml" makes subworkflows nest deeper than 10 levels (level0.yaml → level1.yaml`, last-1, last))
	require.Empty(t, workflow.ValidateOwn(w, node.Default), "the file alone is valid")
}
