package workflow

import (
	"errors"
	"fmt"

	"github.com/skeinhq/skein/internal/confine"
)

// ErrPathEscapes is the condition of a path a file names that leads
// outside the folders it must stay in (errors.Is).
var ErrPathEscapes = confine.ErrEscapes

// ChildFile returns the file of the child workflow that node n names in
// its parameter param (a subworkflow's workflow:, an agent's workflow
// tool): path joined to this workflow's folder (Dir). With every symlink
// resolved it must lie inside that folder or a folder of files:, so that
// neither `..`, an absolute path nor a symlink leads out of what the
// workflow's author put beside it; otherwise the error (ErrPathEscapes)
// names this file, the line of the parameter, the node, where the path
// leads and what to do.
func (w *Workflow) ChildFile(n *Node, param, path string) (string, error) {
	full, err := w.childFile(path)
	if err != nil && n != nil {
		return "", fmt.Errorf("%s:%d: node %q: %w", w.File, n.ParamPos(param).Line, n.ID, err)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", w.File, err)
	}
	return full, nil
}

// childFile is ChildFile without the position: what validation reports at
// the parameter.
func (w *Workflow) childFile(path string) (string, error) {
	full := w.resolve(path)
	if _, err := confine.Resolve(path, append([]string{w.Dir()}, w.FileRoots()...)...); err != nil {
		if errors.Is(err, confine.ErrEscapes) {
			return "", fmt.Errorf("child workflow %w; move the file into %s (a subfolder is fine) or declare its folder in files: [folder]", err, w.Dir())
		}
		return "", fmt.Errorf("child workflow %q cannot be resolved: %w", path, err)
	}
	return full, nil
}
