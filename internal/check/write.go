package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/skeinhq/skein/internal/confine"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/workflow"
)

// VerdictFile is the name of the verdict files in a run folder and in its
// node folders.
const VerdictFile = "verdict.json"

// ErrInvalidNode is returned by Write for a node verdict whose node id
// cannot name a folder.
var ErrInvalidNode = errors.New("invalid node id in verdict")

// Write stores v as <dir>/verdict.json and each node's verdict as
// <dir>/<node>/verdict.json, creating node folders as needed. Node ids
// must be valid node ids ([a-z_][a-z0-9_]*), each once; Write checks them
// all before writing anything. Every file is replaced atomically, and
// nothing is written outside dir, even through a symlink. What the files
// would hold of the run's secrets (a judge's reasoning that quotes one) is
// masked with red, the run's Redactor (nil when it has no secrets).
func Write(dir string, v *RunVerdict, red *redact.Redactor) error {
	if v == nil {
		return errors.New("writing verdict: nil verdict")
	}
	seen := make(map[string]bool, len(v.Nodes))
	for _, nv := range v.Nodes {
		if !workflow.ValidID(nv.Node) {
			return fmt.Errorf("%w: %q: a node id is [a-z_][a-z0-9_]*, at most %d characters", ErrInvalidNode, nv.Node, workflow.MaxIDLen)
		}
		if seen[nv.Node] {
			return fmt.Errorf("%w: node %q has two verdicts", ErrInvalidNode, nv.Node)
		}
		seen[nv.Node] = true
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("writing verdict: %w", err)
	}
	defer root.Close()
	all := *v
	all.Nodes = make([]NodeVerdict, len(v.Nodes))
	for i, nv := range v.Nodes {
		if nv.Checks == nil {
			nv.Checks = []CheckResult{}
		}
		all.Nodes[i] = nv
		if err := mkdir(root, nv.Node); err != nil {
			return fmt.Errorf("writing verdict of node %s: %w", nv.Node, err)
		}
		if err := writeJSON(root, filepath.Join(nv.Node, VerdictFile), nv, red); err != nil {
			return fmt.Errorf("writing verdict of node %s: %w", nv.Node, err)
		}
	}
	if err := writeJSON(root, VerdictFile, all, red); err != nil {
		return fmt.Errorf("writing verdict: %w", err)
	}
	return nil
}

// mkdir creates the folder name unless it is there, refusing anything else
// in its place. The run folder's writer may create the same node folder at
// the same moment: a folder made by someone else in between is fine.
func mkdir(root *os.Root, name string) error {
	err := root.Mkdir(name, 0o755)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := root.Lstat(name)
	switch {
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder (%s)", filepath.Join(root.Name(), name), fi.Mode().Type())
	}
	return nil
}

// writeJSON replaces name with v as indented JSON, secrets masked: a
// temporary file beside it, renamed over.
func writeJSON(root *os.Root, name string, v any, red *redact.Redactor) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	data, err := red.JSON(b.Bytes(), "  ")
	if err != nil {
		return err
	}
	return confine.Replace(root, name, data, 0o644)
}
