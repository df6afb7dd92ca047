// Package engine runs workflows around the pure scheduler (package
// scheduler, whose types this package names under the same names): the
// one driver core both drivers use — Prepare (render, coerce, hash),
// Keep (big values to the blob store within the memory budget),
// ApplyStep (a step update into a step record) — and the local driver,
// which runs tasks as goroutines with a concurrency limit (the tasks of
// kinds declared pure, node.Spec.Pure, on its own loop goroutine, a few
// between two events), feeds their outcomes back to the scheduler and
// records through its Host.
package engine
