// Package schedule fires the schedule triggers of the workflows skein serve
// serves (DESIGN §6): it tells when a cron expression fires in a time zone,
// across daylight-saving changes, and claims each fire in the store, so
// that servers sharing a store, or a server restarted, neither skip nor
// double a fire.
//
// Times reads an expression the way ISC cron does. An expression with a
// fixed time of day (`30 2 * * *`, @daily) is read on the wall clock of its
// time zone: a time the clocks skip (02:30 on the night they go forward)
// fires once, when they jump; a time they repeat (02:30 on the night they
// go back) fires once, the first time. An expression with `*` in its
// minute or hour field (`*/15 * * * *`, @hourly) follows the clock as it
// is: no fire in a skipped hour, fires in both passes of a repeated one.
// `@every 10m` is a fixed interval of real time.
//
// A Scheduler keeps the fire times in the store (store.Schedule). A fire is
// claimed by moving the schedule's next fire time from the value read
// (store.AdvanceSchedule succeeds for one claimant); its run's id is
// derived from the workflow, the trigger and the fire time (RunID), so
// even a run started twice for one fire is one run.
package schedule
