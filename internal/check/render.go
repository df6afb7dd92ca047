package check

import (
	"fmt"
	"strings"
)

// ANSI colors of the verdict bar.
const (
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	bold   = "\x1b[1m"
	reset  = "\x1b[0m"
)

// Counts tallies the check verdicts of a run.
type Counts struct {
	Passed, Warnings, Failed, Errors, Skipped int
	// NotRun counts the checks of nodes that failed.
	NotRun int
}

// Count tallies v's check verdicts.
func Count(v *RunVerdict) Counts {
	var c Counts
	if v == nil {
		return c
	}
	for _, nv := range v.Nodes {
		for _, r := range nv.Checks {
			switch r.Verdict {
			case Pass:
				c.Passed++
			case Warn:
				c.Warnings++
			case Fail:
				c.Failed++
			case Error:
				c.Errors++
			case NotRun:
				c.NotRun++
			default:
				c.Skipped++
			}
		}
	}
	return c
}

// Bar renders the one-line verdict of a run, naming the checks that
// failed (and those that could not be answered), such as
//
//	FAILED · 3 passed, 1 warning, 1 failed (fetch › got data) · stopped at fetch
//
// With color, the status is green, yellow or red. A run without checks
// gives "NO CHECKS".
func Bar(v *RunVerdict, color bool) string {
	if v == nil || v.Status == "" {
		return "NO CHECKS"
	}
	label := v.Status
	if color {
		c := green
		switch v.Status {
		case StatusWarnings, StatusIncomplete:
			c = yellow
		case StatusFailed:
			c = red
		}
		label = bold + c + label + reset
	}
	n := Count(v)
	parts := []string{fmt.Sprintf("%d passed", n.Passed)}
	if n.Warnings > 0 {
		parts = append(parts, plural(n.Warnings, "warning"))
	}
	if n.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed (%s)", n.Failed, names(v, Fail)))
	}
	if n.Errors > 0 {
		parts = append(parts, fmt.Sprintf("%s (%s)", plural(n.Errors, "error"), names(v, Error)))
	}
	if n.NotRun > 0 {
		parts = append(parts, fmt.Sprintf("%d not run (%s: the node failed)", n.NotRun, names(v, NotRun)))
	}
	if n.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", n.Skipped))
	}
	bar := label + " · " + strings.Join(parts, ", ")
	if v.Stopped != "" {
		bar += " · stopped at " + v.Stopped
	}
	if v.Status == StatusIncomplete && n.NotRun == 0 {
		bar += " · the run did not complete"
	}
	return bar
}

// names lists the checks with verdict want as "node › check", at most
// five, then how many more.
func names(v *RunVerdict, want Verdict) string {
	const most = 5
	var out []string
	n := 0
	for _, nv := range v.Nodes {
		for _, r := range nv.Checks {
			if r.Verdict != want {
				continue
			}
			if n++; n <= most {
				out = append(out, nv.Node+" › "+r.Check)
			}
		}
	}
	if n > most {
		out = append(out, fmt.Sprintf("%d more", n-most))
	}
	return strings.Join(out, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Mark is the sign of a verdict in Details: ✓ pass, ⚠ warn, ✗ fail,
// ! error, ⊘ not run, – skipped.
func Mark(v Verdict) string {
	switch v {
	case Pass:
		return "✓"
	case Warn:
		return "⚠"
	case Fail:
		return "✗"
	case Error:
		return "!"
	case NotRun:
		return "⊘"
	default:
		return "–"
	}
}

// Details renders one line per check, in evaluation order:
//
//	✗ fetch › status ok (http_status): status 404, expected 2xx
func Details(v *RunVerdict) string {
	if v == nil {
		return ""
	}
	var b strings.Builder
	for _, nv := range v.Nodes {
		node := nv.Node
		if nv.Visit > 1 {
			node = fmt.Sprintf("%s (visit %d)", nv.Node, nv.Visit)
		}
		for _, r := range nv.Checks {
			name := r.Check
			if r.Type != "" && r.Type != r.Check {
				name += " (" + r.Type + ")"
			}
			fmt.Fprintf(&b, "%s %s › %s", Mark(r.Verdict), node, name)
			if r.Verdict == Error && r.OnFail == OnFailWarn {
				b.WriteString(" [on_fail: warn]")
			}
			if reason := oneLine(r.Reasoning); reason != "" {
				b.WriteString(": " + reason)
			}
			b.WriteByte('\n')
		}
	}
	for _, w := range v.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}
