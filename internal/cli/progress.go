package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/cli/live"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runner"
)

func isTerminal(w io.Writer) bool {
	f, ok := fileOf(w)
	// A terminal answers the terminal ioctl; /dev/null, also a character
	// device, does not.
	return ok && term.IsTerminal(int(f.Fd()))
}

// fileOf returns the file w writes to: w itself, or the file under the
// countingWriter that wraps the command's stdout.
func fileOf(w io.Writer) (*os.File, bool) {
	if c, ok := w.(*countingWriter); ok {
		w = c.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

// colorful reports whether w is a terminal that takes colours and
// redraws: not with NO_COLOR set (to anything) or TERM=dumb.
func (e *env) colorful(w io.Writer) bool {
	if v, ok := e.getenvOK("NO_COLOR"); ok && v != "" {
		return false
	}
	if v, _ := e.getenvOK("TERM"); v == "dumb" {
		return false
	}
	return isTerminal(w)
}

// getenvOK reads the command's environment.
func (e *env) getenvOK(k string) (string, bool) {
	if e.lookupEnv == nil {
		return "", false
	}
	return e.lookupEnv(k)
}

// newDisplay returns the display of an execution's progress: the live
// view on a terminal that takes it, plain lines elsewhere; with -o json,
// only the repair loop's notes, on stderr (stdout carries the JSON).
func (e *env) newDisplay(output string) (d live.Display, color bool) {
	if output == "json" {
		return live.NewPlain(live.Options{Out: e.stderr, Err: e.stderr, NotesOnly: true}), false
	}
	if f, ok := fileOf(e.stdout); ok && e.colorful(f) {
		return live.NewLive(live.Options{Out: f, Err: e.stderr}, live.LiveOptions{Tick: live.DefaultTick}), true
	}
	return live.NewPlain(live.Options{Out: e.stdout, Err: e.stderr}), false
}

// summary prints the run's last lines: how it ended, its outputs, its
// verdict and, when it failed or was cancelled, how to resume it.
func summary(w io.Writer, color bool, r *runner.Result, where string) {
	paint := func(c, s string) string {
		if !color {
			return s
		}
		return c + s + "\x1b[0m"
	}
	const (
		green  = "\x1b[32m"
		red    = "\x1b[31m"
		yellow = "\x1b[33m"
		dim    = "\x1b[2m"
	)
	res, run := r.Engine, r.Run
	var col, word string
	switch record.RunStatus(run.Status) {
	case record.RunCompleted:
		col, word = green, "completed"
	case record.RunCancelled:
		col, word = yellow, "cancelled"
	case record.RunWaiting:
		col, word = yellow, "waiting"
	default:
		col, word = red, string(run.Status)
	}
	usage := ""
	if res.Tokens > 0 {
		usage = fmt.Sprintf(" · %d tokens · $%.4f", res.Tokens, res.CostUSD)
	}
	folder := ""
	if _, err := os.Stat(run.Dir); err == nil { // a queued run that keeps no files has none
		folder = "  " + paint(dim, shownPath(run.Dir))
	}
	fmt.Fprintf(w, "\n%s in %s%s%s\n", paint(col, "run "+run.ID+" "+word), fmtDuration(time.Duration(res.DurationMS)*time.Millisecond), usage, folder)
	if res.Error != nil && res.Status != record.RunCancelled {
		fmt.Fprintln(w, paint(red, "error: "+res.Error.Message))
	}
	if len(res.Outputs) > 0 {
		b := strings.Builder{}
		writeJSON(&b, res.Outputs)
		fmt.Fprintf(w, "outputs: %s", b.String())
	}
	if r.Verdict != nil {
		fmt.Fprintln(w, check.Bar(r.Verdict, color))
	}
	switch record.RunStatus(run.Status) {
	case record.RunWaiting:
		for _, a := range res.Awaiting {
			fmt.Fprintf(w, "%s waits for a signal: skein signal %s %s%s --data '{\"approved\": true}'\n", a.Node, run.ID, a.Node, where)
		}
		if run.WakeAt != nil {
			fmt.Fprintf(w, "without a signal by %s, skein resume %s%s then follows the timeout (skein serve on this folder does it by itself)\n",
				run.WakeAt.Local().Format("2006-01-02 15:04:05"), run.ID, where)
		}
	case record.RunFailed, record.RunCancelled:
		if where != noResume { // a replay is not resumed: it would go live
			fmt.Fprintf(w, "resume with: skein resume %s%s\n", run.ID, where)
		}
	}
}

// noResume is summary's where for a run that is not resumed (a replay).
const noResume = "\x00"

func fmtDuration(d time.Duration) string { return live.FmtDuration(d) }

// shownPath is a path as a command shows it: relative to the working
// folder when it lies inside it (.skein/runs/…), else as it is.
func shownPath(p string) string {
	wd, err := os.Getwd()
	if err != nil || !filepath.IsAbs(p) {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return p
}
