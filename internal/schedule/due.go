package schedule

import (
	"fmt"
	"time"
)

// Policies for fires missed (Missed) and for a fire that comes while the
// previous fire's run still runs (Overlap).
const (
	// MissedSkip drops the fires that passed while no server ran (or
	// more than Grace ago): the schedule goes on with the next time.
	MissedSkip = "skip"
	// MissedRunOnce starts one run for all the fires missed.
	MissedRunOnce = "run_once"
	// OverlapSkip does not start a run while the previous fire's run is
	// still running or waiting.
	OverlapSkip = "skip"
	// OverlapAllow starts the run whatever the previous one does.
	OverlapAllow = "allow"
)

// Grace is how late a fire may start and still be on time: a fire found
// due later than this (the server was down) is missed.
const Grace = time.Minute

// maxCount bounds the fire times counted in one look (a second-by-second
// schedule after days without a server).
const maxCount = 1 << 20

// Due is what to do about a schedule whose next fire time has come.
type Due struct {
	// Fire reports whether a run starts.
	Fire bool
	// At is the latest fire time that has come: the run's scheduled time.
	At time.Time
	// Missed counts the fire times that came without a run of their own
	// (a run that starts stands for them too).
	Missed int
	// Next is the first fire time after now.
	Next time.Time
}

// Due decides about the fire times from next (stored, not after now) to
// now: when the latest is on time (at most Grace ago) it fires, and the
// earlier ones are missed; when it is late too, all are missed, and one
// run stands for them if the policy is MissedRunOnce.
func (t *Times) Due(next, now time.Time, missed string) (Due, error) {
	if missed != "" && missed != MissedSkip && missed != MissedRunOnce {
		return Due{}, fmt.Errorf("missed: %q is not a policy (use %s or %s)", missed, MissedSkip, MissedRunOnce)
	}
	if next.After(now) {
		return Due{Next: next}, nil
	}
	var d Due
	if t.every > 0 {
		n := now.Sub(next)/t.every + 1
		d.At = next.Add((n - 1) * t.every)
		d.Next = d.At.Add(t.every)
		d.Missed = int(min(n, maxCount))
	} else {
		at := next
		for {
			d.At = at
			d.Missed++
			if d.Missed == maxCount {
				// Stop counting; the next time is counted from now.
				d.Next = t.Next(now)
				break
			}
			if at = t.Next(at); at.IsZero() || at.After(now) {
				d.Next = at
				break
			}
		}
	}
	switch {
	case now.Sub(d.At) <= Grace:
		d.Fire = true
		d.Missed--
	case missed == MissedRunOnce:
		d.Fire = true
	}
	return d, nil
}
