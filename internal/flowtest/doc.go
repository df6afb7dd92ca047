// Package flowtest runs workflow tests: files named <name>.test.yaml beside
// a workflow <name>.yaml, each holding cases with inputs (or a trigger and
// its payload), per-node mocks and expectations on the run's status,
// outputs, steps, verdict and spending (docs/testing.md).
//
// Load reads and checks a test file against its workflow; Suite runs the
// cases of many files, in parallel, each file's runs in a temporary folder
// of their own. A mocked node never runs: the engine is given its output
// (or its error) as the step's answer, and the step is marked mocked.
// Every other node runs as it would in skein run.
package flowtest
