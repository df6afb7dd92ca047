package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/schedule"
)

// firesBetween lists the fire times in (from, to].
func firesBetween(t *testing.T, times *schedule.Times, from, to time.Time) []time.Time {
	t.Helper()
	var out []time.Time
	for at := times.Next(from); !at.IsZero() && !at.After(to); at = times.Next(at) {
		require.True(t, at.After(from), "Next goes forward")
		out = append(out, at)
		require.Less(t, len(out), 10000, "runaway")
		from = at
	}
	return out
}

func local(t *testing.T, tz, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(tz)
	require.NoError(t, err)
	at, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	require.NoError(t, err)
	return at
}

func format(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Format("2006-01-02 15:04 MST")
	}
	return out
}

// TestTimesAcrossDST: a fixed time of day fires once a day, also on the
// days the clocks jump (at the jump) and go back (the first pass); an
// expression with a wildcard hour follows the clock.
func TestTimesAcrossDST(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cron, tz string
		from, to       string
		want           []string
	}{
		{"Paris spring forward: 02:30 fires once, when 02:00 jumps to 03:00", "30 2 * * *", "Europe/Paris",
			"2026-03-27 12:00", "2026-03-31 00:00",
			[]string{"2026-03-28 02:30 CET", "2026-03-29 03:00 CEST", "2026-03-30 02:30 CEST"}},
		{"Paris fall back: 02:30 fires once, the first time", "30 2 * * *", "Europe/Paris",
			"2026-10-24 00:00", "2026-10-27 00:00",
			[]string{"2026-10-24 02:30 CEST", "2026-10-25 02:30 CEST", "2026-10-26 02:30 CET"}},
		{"New York spring forward", "30 2 * * *", "America/New_York",
			"2026-03-07 00:00", "2026-03-10 00:00",
			[]string{"2026-03-07 02:30 EST", "2026-03-08 03:00 EDT", "2026-03-09 02:30 EDT"}},
		{"New York fall back: 01:30 happens twice, fires once", "30 1 * * *", "America/New_York",
			"2026-10-31 00:00", "2026-11-03 00:00",
			[]string{"2026-10-31 01:30 EDT", "2026-11-01 01:30 EDT", "2026-11-02 01:30 EST"}},
		{"several skipped times fire once at the jump", "0,20,40 2 * * *", "Europe/Paris",
			"2026-03-29 00:00", "2026-03-29 12:00",
			[]string{"2026-03-29 03:00 CEST"}},
		{"a time just after the gap is not the jump's", "0,30 2-3 * * *", "Europe/Paris",
			"2026-03-29 00:00", "2026-03-29 12:00",
			[]string{"2026-03-29 03:00 CEST", "2026-03-29 03:30 CEST"}},
		{"Lord Howe's half-hour jump", "15 2 * * *", "Australia/Lord_Howe",
			"2026-10-03 12:00", "2026-10-05 12:00",
			[]string{"2026-10-04 02:30 +11", "2026-10-05 02:15 +11"}},
		{"@daily at midnight", "@daily", "Europe/Paris",
			"2026-03-28 12:00", "2026-03-31 00:00",
			[]string{"2026-03-29 00:00 CET", "2026-03-30 00:00 CEST", "2026-03-31 00:00 CEST"}},
		{"wildcard hour: none in the skipped hour", "*/30 * * * *", "Europe/Paris",
			"2026-03-29 01:00", "2026-03-29 03:30",
			[]string{"2026-03-29 01:30 CET", "2026-03-29 03:00 CEST", "2026-03-29 03:30 CEST"}},
		{"wildcard hour: both passes of the repeated hour", "*/30 * * * *", "Europe/Paris",
			"2026-10-25 01:45", "2026-10-25 03:00",
			[]string{"2026-10-25 02:00 CEST", "2026-10-25 02:30 CEST", "2026-10-25 02:00 CET", "2026-10-25 02:30 CET", "2026-10-25 03:00 CET"}},
		{"UTC by default", "0 12 * * 1", "",
			"2026-03-01 00:00", "2026-03-17 00:00",
			[]string{"2026-03-02 12:00 UTC", "2026-03-09 12:00 UTC", "2026-03-16 12:00 UTC"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			times, err := schedule.Parse(tc.cron, tc.tz)
			require.NoError(t, err)
			tz := tc.tz
			if tz == "" {
				tz = "UTC"
			}
			got := firesBetween(t, times, local(t, tz, tc.from), local(t, tz, tc.to))
			require.Equal(t, tc.want, format(got))
		})
	}
}

// TestDailyFiresOncePerDayAllYear: a daily time fires on every day of a
// year with both transitions exactly once, in the zones tested.
func TestDailyFiresOncePerDayAllYear(t *testing.T) {
	t.Parallel()
	for _, tz := range []string{"Europe/Paris", "America/New_York", "Australia/Lord_Howe", "UTC"} {
		for _, hm := range []string{"30 2 * * *", "30 1 * * *", "0 0 * * *", "59 23 * * *"} {
			times, err := schedule.Parse(hm, tz)
			require.NoError(t, err)
			days := map[string]int{}
			for _, at := range firesBetween(t, times, local(t, tz, "2026-01-01 00:00"), local(t, tz, "2026-12-31 00:00")) {
				days[at.Format("2006-01-02")]++
			}
			require.Len(t, days, 364, "%s in %s: one fire a day", hm, tz)
			for d, n := range days {
				require.Equal(t, 1, n, "%s in %s fired %d times on %s", hm, tz, n, d)
			}
		}
	}
}

func TestEvery(t *testing.T) {
	t.Parallel()
	times, err := schedule.Parse("@every 90s", "Europe/Paris")
	require.NoError(t, err)
	at := time.Date(2026, 3, 29, 0, 59, 0, 0, time.UTC)
	require.Equal(t, at.Add(90*time.Second), times.Next(at), "real time, whatever the zone")
	require.Equal(t, time.Date(2026, 3, 29, 1, 0, 40, 0, time.UTC), times.First(at.Add(10*time.Second+400*time.Millisecond)),
		"the first fire is counted from the second")
	require.Equal(t, "@every 90s", times.Spec())
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cron, tz, want string }{
		{"61 * * * *", "UTC", "bad cron expression"},
		{"* * *", "UTC", "bad cron expression"},
		{"CRON_TZ=Europe/Paris 0 2 * * *", "UTC", "write the time zone in tz:"},
		{"0 2 * * *", "Mars/Olympus", "unknown time zone"},
	} {
		_, err := schedule.Parse(tc.cron, tc.tz)
		require.ErrorContains(t, err, tc.want, tc.cron)
	}
	require.NoError(t, schedule.CheckCron("@every 1s"))
	require.Error(t, schedule.CheckCron("TZ=UTC @daily"))
}
