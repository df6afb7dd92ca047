package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/schedule"
)

func TestDue(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		cron     string
		next     time.Time
		now      time.Time
		missed   string
		want     schedule.Due
		wantErr  string
		notFired bool
	}{
		{name: "not yet", cron: "@every 1m", next: t0, now: t0.Add(-time.Second),
			want: schedule.Due{Next: t0}},
		{name: "on time", cron: "@every 1m", next: t0, now: t0.Add(30 * time.Millisecond),
			want: schedule.Due{Fire: true, At: t0, Next: t0.Add(time.Minute)}},
		{name: "late within the grace", cron: "*/5 * * * *", next: t0, now: t0.Add(50 * time.Second),
			want: schedule.Due{Fire: true, At: t0, Next: t0.Add(5 * time.Minute)}},
		{name: "the latest fires, the earlier are missed", cron: "@every 1s", next: t0, now: t0.Add(2500 * time.Millisecond),
			want: schedule.Due{Fire: true, At: t0.Add(2 * time.Second), Missed: 2, Next: t0.Add(3 * time.Second)}},
		{name: "cron: the latest fires", cron: "*/5 * * * *", next: t0, now: t0.Add(16 * time.Minute),
			want: schedule.Due{Fire: true, At: t0.Add(15 * time.Minute), Missed: 3, Next: t0.Add(20 * time.Minute)}},
		{name: "all late, skip", cron: "0 * * * *", next: t0, now: t0.Add(3*time.Hour + 5*time.Minute), missed: schedule.MissedSkip,
			want: schedule.Due{At: t0.Add(3 * time.Hour), Missed: 4, Next: t0.Add(4 * time.Hour)}},
		{name: "all late, skip by default", cron: "0 * * * *", next: t0, now: t0.Add(90 * time.Minute),
			want: schedule.Due{At: t0.Add(time.Hour), Missed: 2, Next: t0.Add(2 * time.Hour)}},
		{name: "all late, run_once", cron: "0 * * * *", next: t0, now: t0.Add(3*time.Hour + 5*time.Minute), missed: schedule.MissedRunOnce,
			want: schedule.Due{Fire: true, At: t0.Add(3 * time.Hour), Missed: 4, Next: t0.Add(4 * time.Hour)}},
		{name: "every, all late, run_once", cron: "@every 2h", next: t0, now: t0.Add(5 * time.Hour), missed: schedule.MissedRunOnce,
			want: schedule.Due{Fire: true, At: t0.Add(4 * time.Hour), Missed: 3, Next: t0.Add(6 * time.Hour)}},
		{name: "every, all late, skip", cron: "@every 2h", next: t0, now: t0.Add(5 * time.Hour),
			want: schedule.Due{At: t0.Add(4 * time.Hour), Missed: 3, Next: t0.Add(6 * time.Hour)}},
		{name: "a week of seconds is counted in one step", cron: "@every 1s", next: t0, now: t0.Add(7 * 24 * time.Hour),
			want: schedule.Due{Fire: true, At: t0.Add(7 * 24 * time.Hour), Missed: 7 * 24 * 3600, Next: t0.Add(7*24*time.Hour + time.Second)}},
		{name: "unknown policy", cron: "0 * * * *", next: t0, now: t0.Add(time.Second), missed: "later", wantErr: "not a policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			times, err := schedule.Parse(tc.cron, "UTC")
			require.NoError(t, err)
			d, err := times.Due(tc.next, tc.now, tc.missed)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, d)
		})
	}
}
