package schedule_test

import (
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/schedule"
)

// A daily 02:30 in Paris around the night the clocks skip from 02:00 to
// 03:00: that night it fires once, when they jump.
func ExampleTimes_Next() {
	times, err := schedule.Parse("30 2 * * *", "Europe/Paris")
	if err != nil {
		panic(err)
	}
	at := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	for range 3 {
		at = times.Next(at)
		fmt.Println(at.Format("Mon 2006-01-02 15:04 MST"))
	}
	// Output:
	// Sat 2026-03-28 02:30 CET
	// Sun 2026-03-29 03:00 CEST
	// Mon 2026-03-30 02:30 CEST
}

// Due decides about a schedule found late: the server was down from 10:00
// to 13:05, and the hourly fires in between were missed.
func ExampleTimes_Due() {
	times, err := schedule.Parse("0 * * * *", "UTC")
	if err != nil {
		panic(err)
	}
	next := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	now := time.Date(2026, 5, 4, 13, 5, 0, 0, time.UTC)
	for _, policy := range []string{schedule.MissedSkip, schedule.MissedRunOnce} {
		d, err := times.Due(next, now, policy)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: fire %v (for %s), %d missed, next %s\n", policy, d.Fire, d.At.Format("15:04"), d.Missed, d.Next.Format("15:04"))
	}
	// Output:
	// skip: fire false (for 13:00), 4 missed, next 14:00
	// run_once: fire true (for 13:00), 4 missed, next 14:00
}
