package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads five-field expressions (minute hour day month weekday) and
// descriptors (@daily, @every 5m).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// CheckCron reports what is wrong with a cron expression, if anything.
func CheckCron(expr string) error {
	_, err := parseExpr(expr)
	return err
}

func parseExpr(expr string) (cron.Schedule, error) {
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, errors.New("write the time zone in tz:, not in the expression")
	}
	return parser.Parse(expr)
}

// Times are the fire times of a cron expression read in a time zone.
type Times struct {
	expr string
	tz   string
	loc  *time.Location
	// every is the interval of @every; the others are zero then.
	every time.Duration
	spec  *cron.SpecSchedule
	// wall: a fixed time of day, read on the wall clock (see the package
	// doc); else the expression follows the clock as it is.
	wall bool
}

// Parse reads a cron expression and an IANA time zone ("" is UTC).
func Parse(expr, tz string) (*Times, error) {
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", tz)
	}
	s, err := parseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("bad cron expression %q: %w", expr, err)
	}
	t := &Times{expr: strings.TrimSpace(expr), tz: tz, loc: loc}
	switch s := s.(type) {
	case cron.ConstantDelaySchedule:
		t.every = s.Delay
	case *cron.SpecSchedule:
		c := *s
		t.spec = &c
		t.wall = fixedTime(t.expr)
		if t.wall {
			t.spec.Location = time.UTC // read on naive wall-clock times
		} else {
			t.spec.Location = loc
		}
	default:
		return nil, fmt.Errorf("cron expression %q: unsupported schedule %T", expr, s)
	}
	return t, nil
}

// fixedTime reports whether an expression names fixed times of day: no
// `*` leads its minute or hour field, as ISC cron decides.
func fixedTime(expr string) bool {
	switch expr {
	case "@hourly":
		return false
	case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight":
		return true
	}
	f := strings.Fields(expr)
	return len(f) >= 2 && !strings.HasPrefix(f[0], "*") && !strings.HasPrefix(f[1], "*")
}

// Spec identifies the fire times: the expression and the time zone.
func (t *Times) Spec() string {
	if t.every > 0 {
		return t.expr
	}
	return t.expr + " | " + t.tz
}

// Expr returns the expression and the time zone as given.
func (t *Times) Expr() (expr, tz string) { return t.expr, t.tz }

// Location is the time zone the expression is read in.
func (t *Times) Location() *time.Location { return t.loc }

// First is the first fire time of a schedule set up at now: for @every,
// now (to the second) plus the interval; else the next time after now.
func (t *Times) First(now time.Time) time.Time {
	if t.every > 0 {
		return now.Truncate(time.Second).Add(t.every)
	}
	return t.Next(now)
}

// Next returns the first fire time strictly after `after`, or the zero
// time when there is none (an expression such as `0 0 30 2 *`).
func (t *Times) Next(after time.Time) time.Time {
	switch {
	case t.every > 0:
		return after.Add(t.every)
	case !t.wall:
		return t.spec.Next(after.In(t.loc))
	}
	w := naive(after.In(t.loc))
	for range 1000 {
		w = t.spec.Next(w)
		if w.IsZero() {
			return w
		}
		// A wall time whose instant is not after `after`: its first
		// pass when `after` is in the second pass of a repeated hour,
		// or a skipped time that already fired at the jump.
		if at := t.instant(w); at.After(after) {
			return at
		}
	}
	return time.Time{}
}

// naive is a wall-clock time as the same clock reading in UTC.
func naive(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}

// instant is when the wall clock of t.loc reads w (a naive time): the
// first time when it reads it twice, and the moment the clock jumps when
// it skips it.
func (t *Times) instant(w time.Time) time.Time {
	y, mo, d := w.Date()
	h, mi, s := w.Clock()
	probe := time.Date(y, mo, d, h, mi, s, 0, t.loc)
	_, before := probe.Add(-12 * time.Hour).Zone()
	_, after := probe.Add(12 * time.Hour).Zone()
	var first time.Time
	for _, off := range []int{before, after} {
		u := time.Unix(w.Unix()-int64(off), 0).In(t.loc)
		if naive(u).Equal(w) && (first.IsZero() || u.Before(first)) {
			first = u
		}
	}
	if !first.IsZero() {
		return first
	}
	// Skipped: read with the offset before the jump, w falls after it,
	// in the zone the jump began.
	u := time.Unix(w.Unix()-int64(before), 0).In(t.loc)
	if start, _ := u.ZoneBounds(); !start.IsZero() {
		return start
	}
	return u
}
