package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/skeinhq/skein/internal/confine"
	"github.com/skeinhq/skein/node"
)

// LockVersion is the version of the lock file format.
const LockVersion = 1

// Lock is a workflow's lock file, <name>.skein.lock beside it: for each MCP
// server (by its name in mcp_servers), a hash of each tool's description
// and of its input schema, as the server listed them when they were
// pinned. It is meant to be committed with the workflow.
type Lock struct {
	Version int                              `yaml:"version"`
	Servers map[string]map[string]PinnedTool `yaml:"servers"`
}

// PinnedTool is what a lock keeps of one tool (its name is the key).
type PinnedTool struct {
	Description string `yaml:"description"`  // sha256:<hex> of the description
	InputSchema string `yaml:"input_schema"` // sha256:<hex> of the input schema as canonical JSON
}

// LockPath returns the lock file of a workflow file: flow.yaml →
// flow.skein.lock in the same folder.
func LockPath(workflowFile string) string {
	dir, base := filepath.Split(workflowFile)
	for _, ext := range []string{".yaml", ".yml", ".json"} {
		if b, ok := strings.CutSuffix(base, ext); ok {
			base = b
			break
		}
	}
	return filepath.Join(dir, base+".skein.lock")
}

// lockInFolder refuses a lock file that leads out of its folder, the
// workflow's, through a symlink: the lock is read and written there, and
// pins kept elsewhere would be neither the workflow's nor safe to write.
func lockInFolder(path string) error {
	_, err := confine.Resolve(filepath.Base(path), filepath.Dir(path))
	switch {
	case errors.Is(err, confine.ErrEscapes):
		return fmt.Errorf("lock file %w, the folder of its workflow; replace the symlink with the lock file itself (skein lock update writes it)", err)
	case err != nil:
		return fmt.Errorf("lock file %s cannot be resolved: %w", path, err)
	}
	return nil
}

// Pin returns the pinned form of a tool.
func Pin(t *Tool) PinnedTool {
	schema := []byte("null")
	if t.InputSchema != nil {
		// Marshal, decode and marshal again: maps marshal with sorted
		// keys, so the same schema always hashes the same.
		if b, err := json.Marshal(t.InputSchema); err == nil {
			var v any
			if json.Unmarshal(b, &v) == nil {
				if c, err := json.Marshal(v); err == nil {
					schema = c
				}
			}
		}
	}
	return PinnedTool{Description: digest([]byte(t.Description)), InputSchema: digest(schema)}
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PinAll returns the pinned form of a server's tools.
func PinAll(tools []*Tool) map[string]PinnedTool {
	out := make(map[string]PinnedTool, len(tools))
	for _, t := range tools {
		out[t.Name] = Pin(t)
	}
	return out
}

// ReadLock reads a lock file. A file that does not exist is an empty lock
// and no error.
func ReadLock(path string) (*Lock, error) {
	if err := lockInFolder(path); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Lock{Version: LockVersion, Servers: map[string]map[string]PinnedTool{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the lock file %s: %w", path, err)
	}
	var l Lock
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&l); err != nil && !errors.Is(err, io.EOF) { // EOF: an empty file, caught by the version check
		return nil, fmt.Errorf("lock file %s is not valid: %v; delete it and run skein lock update on the workflow to write it again", path, err)
	}
	if l.Version != LockVersion {
		return nil, fmt.Errorf("lock file %s has version %d; this Skein reads version %d", path, l.Version, LockVersion)
	}
	if l.Servers == nil {
		l.Servers = map[string]map[string]PinnedTool{}
	}
	for name, tools := range l.Servers {
		if tools == nil { // "fs:" with nothing under it: a server with no tools
			l.Servers[name] = map[string]PinnedTool{}
		}
	}
	return &l, nil
}

// Marshal returns the lock file's text: a header, then servers and tools
// in name order.
func (l *Lock) Marshal(workflowFile string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# MCP tools pinned for %s by skein: commit this file with the workflow.\n", filepath.Base(workflowFile))
	fmt.Fprintf(&b, "# A tool whose description or input schema changes blocks the nodes that use it\n")
	fmt.Fprintf(&b, "# until you accept the change with: skein lock update %s\n", filepath.Base(workflowFile))
	fmt.Fprintf(&b, "version: %d\nservers:", LockVersion)
	if len(l.Servers) == 0 {
		b.WriteString(" {}\n")
		return b.Bytes()
	}
	b.WriteString("\n")
	for _, s := range slices.Sorted(maps.Keys(l.Servers)) {
		fmt.Fprintf(&b, "  %s:", quote(s))
		tools := l.Servers[s]
		if len(tools) == 0 {
			b.WriteString(" {}\n")
			continue
		}
		b.WriteString("\n")
		for _, t := range slices.Sorted(maps.Keys(tools)) {
			p := tools[t]
			fmt.Fprintf(&b, "    %s:\n      description: %s\n      input_schema: %s\n", quote(t), p.Description, p.InputSchema)
		}
	}
	return b.Bytes()
}

// quote writes a name as a YAML key: JSON quoting is valid YAML and keeps
// any name (spaces, colons, a leading dash) a string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// WriteLock writes l to path atomically: a reader sees the old file or the
// new one, never half of it.
func WriteLock(path, workflowFile string, l *Lock) error {
	if err := lockInFolder(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename; cleans up a failure
	if _, err := tmp.Write(l.Marshal(workflowFile)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Change is how one tool differs from its pin.
type Change struct {
	Tool string `json:"tool"`
	// What changed: "description", "input_schema", "new" (the server
	// lists it, the lock does not) or "removed" (the lock lists it, the
	// server does not).
	What []string `json:"what"`
}

// Compare lists how the tools now differ from pinned, by tool name:
// changed and new tools, then removed ones.
func Compare(pinned, now map[string]PinnedTool) []Change {
	var out []Change
	for _, name := range slices.Sorted(maps.Keys(now)) {
		p, ok := pinned[name]
		if what := differ(p, ok, now[name]); what != nil {
			out = append(out, Change{Tool: name, What: what})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(pinned)) {
		if _, ok := now[name]; !ok {
			out = append(out, Change{Tool: name, What: []string{"removed"}})
		}
	}
	return out
}

// differ says how a tool differs from its pin p (pinned false: there is
// none): nil when it does not.
func differ(p PinnedTool, pinned bool, now PinnedTool) []string {
	if !pinned {
		return []string{"new"}
	}
	var what []string
	if p.Description != now.Description {
		what = append(what, "description")
	}
	if p.InputSchema != now.InputSchema {
		what = append(what, "input_schema")
	}
	return what
}

// LockService is the key of the run's *Pins in node.Call.Services. A host
// that provides none (a workflow with no file) pins nothing.
var LockService = node.NewService[*Pins]("the workflow's pinned MCP tools")

// Pins checks the tools a run's nodes use against the workflow's lock file.
// The file is read at the first check of the run; a server the lock does
// not list yet is pinned then: every tool it lists is recorded and the file
// written. Its methods are safe for concurrent use.
type Pins struct {
	workflow string // the workflow file
	path     string // its lock file

	mu     sync.Mutex
	lock   *Lock
	err    error           // reading the lock failed
	warned map[string]bool // servers whose pinning could not be saved
}

// NewPins returns the pins of a workflow file, read on first use.
func NewPins(workflowFile string) *Pins {
	return &Pins{workflow: workflowFile, path: LockPath(workflowFile), warned: map[string]bool{}}
}

// Path is the lock file.
func (p *Pins) Path() string { return p.path }

// Check checks the tools of server that a node is about to use against the
// lock. A server the lock lacks is pinned first (all of its tools, listed
// through pool), and the lock file written; when it cannot be written, warn
// is told once per server and the run goes on with the pins kept in memory.
// A tool that is new or whose description or input schema changed is a
// permanent node.Error, mcp_tool_changed, naming server, tool, what
// changed and the command that accepts it.
func (p *Pins) Check(ctx context.Context, pool *Pool, server string, used []*Tool, warn func(string)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lock == nil && p.err == nil {
		p.lock, p.err = ReadLock(p.path)
	}
	if p.err != nil {
		return &node.Error{Code: "mcp_lock", Category: node.CategoryValidation, Permanent: true, Message: p.err.Error(), Err: p.err}
	}
	pinned, ok := p.lock.Servers[server]
	if !ok {
		all, err := pool.Tools(ctx, server)
		if err != nil {
			return err
		}
		if err := p.record(server, PinAll(all)); err != nil && !p.warned[server] {
			p.warned[server] = true
			if warn != nil {
				warn(fmt.Sprintf("the tools of MCP server %q are not pinned: writing %s failed: %v; "+
					"they are checked against what it lists now for the rest of this run only. "+
					"Run skein lock update %s where the folder is writable, and commit the lock file",
					server, p.path, err, p.workflow))
			}
		}
		pinned = p.lock.Servers[server]
	}
	var changes []Change
	for _, t := range used {
		p, ok := pinned[t.Name]
		if what := differ(p, ok, Pin(t)); what != nil {
			changes = append(changes, Change{Tool: t.Name, What: what})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	parts := make([]string, len(changes))
	list := make([]any, len(changes))
	for i, c := range changes {
		parts[i] = fmt.Sprintf("tool %q %s", c.Tool, describe(c.What))
		list[i] = map[string]any{"tool": c.Tool, "what": toAny(c.What)}
	}
	return &node.Error{
		Code: "mcp_tool_changed", Category: node.CategoryValidation, Permanent: true,
		Message: fmt.Sprintf("MCP server %q: %s since it was pinned in %s; if you trust it, accept it with: skein lock update %s",
			server, strings.Join(parts, "; "), p.path, p.workflow),
		Details: map[string]any{"server": server, "lock": p.path, "changes": list},
	}
}

// record pins server's tools, in memory and in the lock file. The file is
// read again first, so pins another run wrote meanwhile are kept.
func (p *Pins) record(server string, tools map[string]PinnedTool) error {
	p.lock.Servers[server] = tools
	onDisk, err := ReadLock(p.path)
	if err != nil {
		return err
	}
	if theirs, ok := onDisk.Servers[server]; ok {
		p.lock.Servers[server] = theirs // another run pinned it first
		return nil
	}
	onDisk.Servers[server] = tools
	return WriteLock(p.path, p.workflow, onDisk)
}

func describe(what []string) string {
	switch what[0] {
	case "new":
		return "is not in the lock file (the server added it)"
	}
	names := make([]string, len(what))
	for i, w := range what {
		names[i] = strings.ReplaceAll(w, "_", " ")
	}
	return "changed its " + strings.Join(names, " and ")
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
