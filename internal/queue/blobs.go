package queue

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
)

// ArtifactsKey is the directive of a queued step that lists the artifacts
// its node wrote, by name: {"_artifacts": {"shot-1.png": <blob>}}. A
// worker keeps no run folder, so the files a node writes in its artifacts
// folder are moved to the blob store every worker and the server reach.
const ArtifactsKey = "_artifacts"

// artifacts moves the files a task's node wrote in its artifacts folder
// dir (a temporary folder of this worker) to the blob store, lists them in
// the outcome's ArtifactsKey directive, and replaces their paths in the
// output by their names: the folder is removed once the task ends. A file
// that holds a secret value is not kept: refused names those.
func artifacts(st *blob.Store, dir string, oc engine.Outcome) (_ engine.Outcome, refused []string, _ error) {
	list := map[string]any{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		v, err := keepFile(st, path)
		if err != nil {
			return fmt.Errorf("keeping artifact %s: %w", name, err)
		}
		if _, ok := v.(*blob.Blob); !ok {
			refused = append(refused, name)
			return nil
		}
		list[name] = v
		return nil
	})
	if err != nil || len(list) == 0 {
		return oc, refused, err
	}
	d := maps.Clone(oc.Directives)
	if d == nil {
		d = map[string]any{}
	}
	d[ArtifactsKey] = list
	oc.Directives = d
	if out, changed := renamePaths(oc.Output, dir+string(filepath.Separator)); changed {
		oc.Output = out.(map[string]any)
	}
	return oc, refused, nil
}

// keepFile writes a file into a blob.
func keepFile(st *blob.Store, path string) (any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w, err := st.Create()
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Abort()
		return nil, err
	}
	return w.Commit()
}

// renamePaths returns v with each string that names a file under prefix
// replaced by the file's name relative to it, copying only what changes,
// and whether anything did.
func renamePaths(v any, prefix string) (any, bool) {
	switch x := v.(type) {
	case string:
		if rest, ok := strings.CutPrefix(x, prefix); ok {
			return filepath.ToSlash(rest), true
		}
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			if ne, changed := renamePaths(e, prefix); changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = ne
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, e := range x {
			if ne, changed := renamePaths(e, prefix); changed {
				if out == nil {
					out = append([]any(nil), x...)
				}
				out[i] = ne
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}

// artifactRoot is a private folder of the worker, made on first use, in
// which each task's artifacts folder is named — and made only by a kind
// that saves a file (as a run folder's are), so a task that saves none
// costs one lstat (call looks for its folder), no folder made or removed.
type artifactRoot struct {
	mu  sync.Mutex
	dir string
	n   int64
}

// next names a new artifacts folder.
func (a *artifactRoot) next() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dir == "" {
		dir, err := os.MkdirTemp("", "skein-artifacts-")
		if err != nil {
			return "", err
		}
		a.dir = dir
	}
	a.n++
	return filepath.Join(a.dir, strconv.FormatInt(a.n, 10)), nil
}

// remove removes the root and what is left in it (the worker stopped).
func (a *artifactRoot) remove() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dir != "" {
		_ = os.RemoveAll(a.dir)
		a.dir = ""
	}
}

// call runs a task's kind on this worker: its artifacts go to a folder of
// the worker and then to the blob store, and the big values of its outcome
// to the blob store, before the outcome is recorded.
func (d *Driver) call(ctx context.Context, env *runEnv, tenv engine.TaskEnv, t *engine.Task, params map[string]any) (engine.Outcome, map[string]any) {
	dir, err := d.artifacts.next()
	if err != nil {
		return engine.Outcome{Err: &node.Error{Code: "artifact", Category: node.CategoryInternal, Err: err,
			Message: fmt.Sprintf("node %s: making its artifacts folder: %v", t.Node.ID, err)}}, params
	}
	tenv.ArtifactDir = func(string) string { return dir }
	oc := tenv.Call(ctx, t, params)
	if _, err := os.Lstat(dir); err == nil {
		defer os.RemoveAll(dir)
		var refused []string
		oc, refused, err = artifacts(env.blobs, dir, oc)
		if err != nil && oc.Err == nil {
			oc = engine.Outcome{Err: &node.Error{Code: "artifact", Category: node.CategoryInternal, Err: err,
				Message: fmt.Sprintf("node %s: %v", t.Node.ID, err)}}
		}
		if len(refused) > 0 && tenv.Emit != nil {
			tenv.Emit(t, engine.EventWarning, map[string]any{
				"message": fmt.Sprintf("artifacts not kept: they hold a secret value: %s", strings.Join(refused, ", "))})
		}
	}
	oc, params = engine.Keep(env.blobs, nil, t.Node, oc, params)
	return engine.KeepMessage(env.blobs, env.red, oc), params
}
