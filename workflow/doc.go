// Package workflow is Skein's model of a workflow file: decoding YAML and
// JSON with the position of every value, and validation that reports every
// problem at once.
//
// Decode checks the file's shape — unknown keys (with a "did you mean"),
// types, durations — and keeps positions, so each Diagnostic names the file,
// line and column. Validate checks its meaning against the registered node
// kinds: node ids, parameters, edges and handles, loop bodies and cycles,
// and every template reference. Load does both for a file on disk.
//
//	w, ds := workflow.Load("flow.yaml", node.Default)
//	for _, d := range ds {
//		fmt.Println(d) // flow.yaml:12:11: error: … (node fetch)
//	}
//
// YAML is read with go.yaml.in/yaml/v3's Node API, which keeps the line and
// column of every value; JSON with go-json-experiment/json's jsontext, which
// reports the byte offset of every token (encoding/json reports none).
//
// Graph gives the validated workflow as indexed nodes and edges with
// back-edges marked; the engine plans runs from it. Decoding is bounded:
// files over MaxFileSize, nesting deeper than MaxDepth and alias expansion
// beyond MaxAliasValues are refused with an error, never a crash.
package workflow
