// Package record holds the records of runs: run and step statuses, the
// step record, the run row, and events with their types. It is the one
// vocabulary the engine, the stores, the runner and every front end speak
// (DESIGN §2.7, §2.8, §5): a step has one shape whether the engine just
// made it, a store read it back, or a front end prints it.
//
// The package is a leaf: it imports nothing of the project but the public
// node package (for node.Error), so any layer may use it.
package record
