// Package live shows a run's progress as it goes, for `skein run`,
// `resume`, `rerun` and `signal`.
//
// Both displays are runner.Observers and print the same finished lines,
// one per step once it is committed: ✓ success, ✗ failed (with its error
// and the last 20 lines of its stderr), ⊘ cancelled (with why), – skipped,
// ↻ cached or pinned, ⏸ waiting; the branch a node took (→ true), the
// foreach item (sq[2]) or loop pass of a step, and a retry as
// "↻ attempt 2/3 in 2s (reason)" rather than a mark per attempt.
//
//   - Plain writes those lines and nothing else: stable text for logs,
//     pipes, NO_COLOR and TERM=dumb.
//   - Live, on a terminal, redraws a view in place without the alternate
//     screen and without querying the terminal: the finished lines are
//     printed above it for good, each cut to the terminal's width, and under
//     them it keeps the nodes running now with a spinner and their
//     elapsed time, the nodes waiting for a slot or a retry, and the run's
//     tokens, cost and time so far.
//
// Time comes from a clock.Clock, so tests drive both with a fixed clock
// and events, never sleeps.
package live
