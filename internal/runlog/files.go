package runlog

import (
	"path/filepath"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// AbsArtifactDir gives each node its artifacts folder in the run folder,
// as an absolute path: the paths of saved files a node outputs (an mcp node's
// images) are read by later nodes whose relative paths resolve against the
// workflow's folder, not the working directory.
func (rl *Writer) AbsArtifactDir() func(nodeID string) string {
	// The run folder made absolute once: filepath.Abs asks the system for
	// the working folder, and the engine asks for every node's visit.
	base, err := filepath.Abs(rl.Dir())
	if err != nil {
		base = rl.Dir()
	}
	return func(nodeID string) string {
		name, err := rl.artifactName(nodeID)
		if err != nil {
			return ""
		}
		return filepath.Join(base, name)
	}
}

// Files is the file-access policy of a run's nodes and its judge: they
// may read the run's folder (its artifacts) and the workflow's files:, and
// relative paths are relative to the workflow's folder.
func Files(w *workflow.Workflow, runDir string) *node.Files {
	roots := w.FileRoots()
	if runDir != "" {
		if abs, err := filepath.Abs(runDir); err == nil {
			runDir = abs
		}
		roots = append(roots, runDir)
	}
	return node.NewFiles(w.Dir(), roots...)
}
