package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/workflow"
)

// Catalog is the workflows the server serves: every valid workflow file
// of its folder, by name, and the files that could not be served with
// why. A catalog is never changed; a reload makes a new one.
type Catalog struct {
	Dir       string
	Workflows []*Entry // by name
	Problems  []FileProblem
	LoadedAt  time.Time
	byName    map[string]*Entry
}

// Entry is one served workflow.
type Entry struct {
	Name   string
	File   string
	W      *workflow.Workflow
	Source []byte
	// Warnings are validation's warnings about the file.
	Warnings workflow.Diagnostics
}

// FileProblem is a file of the folder that is not served (it does not
// validate, or its workflow's name is taken by another file), or, with
// Node, a webhook trigger of a served workflow that cannot take requests
// (its secret is not set).
type FileProblem struct {
	File        string                `json:"file"`
	Node        string                `json:"node,omitempty"`
	Message     string                `json:"message"`
	Diagnostics []workflow.Diagnostic `json:"diagnostics,omitempty"`
}

// Lookup returns the entry of a workflow name, or nil.
func (c *Catalog) Lookup(name string) *Entry { return c.byName[name] }

// problemOf returns the problem of the file that would hold workflow name
// (its base name, without extension), if any.
func (c *Catalog) problemFor(name string) *FileProblem {
	for i, p := range c.Problems {
		if p.Node != "" { // a served workflow's webhook
			continue
		}
		base := filepath.Base(p.File)
		if strings.TrimSuffix(base, filepath.Ext(base)) == name {
			return &c.Problems[i]
		}
	}
	return nil
}

// isWorkflowFile tells the files of the folder that are workflows: YAML or
// JSON, not hidden (editors' temporary files), not the test files and
// repaired copies that sit beside workflows.
func isWorkflowFile(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") {
		return false
	}
	for _, skip := range []string{".test.yaml", ".test.yml", ".repaired.yaml", ".repaired.yml"} {
		if strings.HasSuffix(name, skip) {
			return false
		}
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// loadCatalog loads every workflow file of dir. A file that does not
// validate is a problem of the catalog, not an error: the others are
// served. Two files with one workflow name: the first by file name is
// served.
func loadCatalog(dir string, load func(file string) (*workflow.Workflow, error)) (*Catalog, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	c := &Catalog{Dir: dir, byName: map[string]*Entry{}, LoadedAt: time.Now()}
	for _, de := range ents {
		if de.IsDir() || !isWorkflowFile(de.Name()) {
			continue
		}
		file := filepath.Join(dir, de.Name())
		w, err := load(file)
		if err != nil {
			p := FileProblem{File: file, Message: err.Error()}
			var inv *runner.InvalidError
			if errors.As(err, &inv) {
				p.Diagnostics = inv.Diagnostics.Errors()
			}
			c.Problems = append(c.Problems, p)
			continue
		}
		w.Node("") // builds the node index now: runs share w from here on
		if other := c.byName[w.Name]; other != nil {
			c.Problems = append(c.Problems, FileProblem{File: file,
				Message: "workflow " + w.Name + " is already served from " + other.File + "; give each workflow its own name"})
			continue
		}
		src, err := workflow.ReadFile(file)
		if err != nil {
			c.Problems = append(c.Problems, FileProblem{File: file, Message: err.Error()})
			continue
		}
		e := &Entry{Name: w.Name, File: file, W: w, Source: src}
		c.byName[w.Name] = e
		c.Workflows = append(c.Workflows, e)
	}
	sort.Slice(c.Workflows, func(i, j int) bool { return c.Workflows[i].Name < c.Workflows[j].Name })
	return c, nil
}

// Reload loads the workflows folder again and serves what it holds now.
// Runs in progress keep the workflow they started with.
func (s *Server) Reload() error {
	c, err := loadCatalog(s.cfg.Workflows, func(file string) (*workflow.Workflow, error) {
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, err
		}
		return s.cfg.Runner.Load(abs)
	})
	if err != nil {
		s.log.Error("loading workflows", "dir", s.cfg.Workflows, "err", err)
		return err
	}
	for _, p := range c.Problems {
		attrs := []any{"file", p.File, "problem", p.Message}
		s.log.Error("workflow not served", attrs...)
	}
	// The hooks are built now, so that one whose secret is not set is a
	// problem (and in the log) before any request comes for it.
	hooks, hookProblems := s.newHookCache(c)
	c.Problems = append(c.Problems, hookProblems...)
	names := make([]string, 0, len(c.Workflows))
	for _, e := range c.Workflows {
		names = append(names, e.Name)
	}
	s.log.Info("workflows loaded", "dir", s.cfg.Workflows, "served", len(c.Workflows), "problems", len(c.Problems), "names", names)
	s.catalog.Store(c)
	s.hooks.Store(hooks)
	s.sched.Set(s.scheduleTriggers(c))
	select {
	case s.reloaded <- struct{}{}: // the new files get their versions
	default:
	}
	return nil
}

// Catalog returns the workflows served now.
func (s *Server) Catalog() *Catalog { return s.catalog.Load() }

// Watch starts watching the workflows folder: from its return on, a
// change to a workflow file in it (or to the ..data link through which a
// ConfigMap volume's files are read) reloads the folder (fsnotify; the
// changes within reloadDelay make one reload) once run runs, until ctx
// ends. A server calls it before it answers requests, so that a file
// written once it answers is seen.
func (s *Server) Watch() (run func(ctx context.Context), err error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := fw.Add(s.cfg.Workflows); err != nil {
		_ = fw.Close()
		return nil, err
	}
	return func(ctx context.Context) {
		defer fw.Close()
		var due <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				// A Kubernetes ConfigMap's volume changes its files all at
				// once by pointing its ..data link at a new folder.
				if name := filepath.Base(ev.Name); (isWorkflowFile(name) || name == "..data") && due == nil {
					due = time.After(reloadDelay)
				}
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				s.log.Warn("watching the workflows folder", "err", err)
			case <-due:
				due = nil
				_ = s.Reload()
			}
		}
	}, nil
}

// reloadDelay gathers the events of one save (editors write, rename and
// chmod) into one reload.
const reloadDelay = 150 * time.Millisecond
