package workflow

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a workflow file: 1-based line and column. The zero
// Pos means unknown.
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Severity tells errors from warnings.
type Severity string

// Severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Diagnostic is one problem found in a workflow file.
type Diagnostic struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Col      int      `json:"col"`
	Path     string   `json:"path,omitempty"` // e.g. nodes[2].url
	Node     string   `json:"node,omitempty"` // the node id, when the problem belongs to a node
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

// String formats the diagnostic as file:line:col: severity: message (node x).
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", d.Line, d.Col)
	}
	// The node is named at the end of the message's first line: the
	// lines after it (a child workflow's problems) are the detail.
	first, rest, _ := strings.Cut(d.Message, "\n")
	fmt.Fprintf(&b, ": %s: %s", d.Severity, first)
	if d.Node != "" {
		fmt.Fprintf(&b, " (node %s)", d.Node)
	}
	if rest != "" {
		b.WriteString("\n" + rest)
	}
	return b.String()
}

// Diagnostics is a list of problems. As an error it reports the errors
// among them.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Errors returns only the errors.
func (ds Diagnostics) Errors() Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == Error {
			out = append(out, d)
		}
	}
	return out
}

// Err returns ds as an error when it holds errors, else nil.
func (ds Diagnostics) Err() error {
	if !ds.HasErrors() {
		return nil
	}
	return ds
}

func (ds Diagnostics) Error() string {
	var lines []string
	for _, d := range ds.Errors() {
		lines = append(lines, d.String())
	}
	return strings.Join(lines, "\n")
}

// Sort orders diagnostics by file position; stable for equal positions.
func (ds Diagnostics) Sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// diags collects diagnostics for one file.
type diags struct {
	file string
	list Diagnostics
}

func (d *diags) add(sev Severity, pos Pos, path, nodeID, format string, args ...any) {
	d.list = append(d.list, Diagnostic{
		File: d.file, Line: pos.Line, Col: pos.Col, Path: path, Node: nodeID,
		Severity: sev, Message: fmt.Sprintf(format, args...),
	})
}

func (d *diags) errorf(pos Pos, path, nodeID, format string, args ...any) {
	d.add(Error, pos, path, nodeID, format, args...)
}

func (d *diags) warnf(pos Pos, path, nodeID, format string, args ...any) {
	d.add(Warning, pos, path, nodeID, format, args...)
}
