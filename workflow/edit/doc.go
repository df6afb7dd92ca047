// Package edit applies edits to the text of a workflow file — the edits a
// graph editor makes: set and unset a node's fields, add, remove, rename,
// duplicate, disable and enable nodes, connect and disconnect them — and
// keeps everything else as it was written: comments, key order, quoting,
// blank lines and layout.
//
// Apply does not decode and re-encode the document (that would reformat
// it). It finds, with the same libraries workflow.Decode uses
// (go.yaml.in/yaml/v3's Node API for YAML, go-json-experiment's jsontext
// for JSON), the byte span of every value, key and list element, and
// writes only the bytes of the values an op changes, the entries it adds
// and the entries it removes. New text follows the file: block YAML in a
// block map or list, {…} where the surrounding entries are written so
// (edges usually are), JSON in a JSON file, indented like its neighbours.
// Scalars are written by the YAML encoder, so a string is quoted only when
// YAML needs it ("true", "a: b", "#x").
//
// Choices worth knowing:
//   - remove_node removes the node's entry and every edge from or to it.
//     Comment lines written above the node stay (they may describe what
//     comes next); template references to the node stay too, and
//     workflow.Validate reports them at their line.
//   - rename_node changes the id, every edge's from and to and an
//     endloop's loop that name it, and every reference to it: in the
//     templates of nodes' fields and of outputs, and in the expression
//     fields (a node's condition and exit, a switch case's condition, a
//     check's expr). Only the name is rewritten, in place; a value whose
//     text cannot be (the name written with an escape) is written again
//     by the encoder. A reference in a value with an anchor, or in a
//     block scalar it cannot rewrite in place, refuses the rename
//     (ErrLayout).
//   - duplicate copies the node's text, comments inside it included,
//     right after it under the new id; the copy has no edges.
//   - disable writes disabled: true; enable removes the disabled key.
//   - disconnect removes the edges from node to to that leave by handle;
//     the empty handle is the default one, an edge written without on.
//   - Removing the last entry of a map or list writes {} or [].
//
// Apply refuses an op it cannot apply with an *OpError (wrapping
// ErrUnknownNode, ErrBadPath, ErrClash, …) and leaves the text alone. It
// also refuses to write over a value with a YAML anchor, alias or tag
// (ErrLayout): the change would reach every alias of it. Every op's result
// is parsed again before the next op runs, so Apply never returns text
// that does not parse.
package edit
