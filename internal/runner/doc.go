// Package runner is Skein's application layer: it starts, resumes, reruns,
// cancels, signals, shows, lists, prunes and checks runs. Every front end — the
// command line, `skein mcp`, and later the HTTP server and the workers —
// calls it with typed requests and gets typed results and typed errors;
// none of them holds run logic.
//
// A Runner owns the store (.skein/skein.db, or the database of
// [Config.DB]: a Postgres URL or a SQLite file, opened by package
// store/open), the group committer shared by the runs it executes, and
// for each run its run folder, MCP servers, models and checks. It decides
// what each execution becomes and leaves the mechanics to packages of
// their own: durable (leases, run folders, child runs, parked and left
// runs), services (what the node kinds get), queue (queued runs, followed
// from here), delivery, repair (the --auto-repair loop, driving the
// runner through repair.Runs), rundoc (the document of a run), cassette,
// check, secrets and preflight.
//
// # Ownership
//
// A run that executes has one owner — the process executing it — recorded
// in the store with a lease the owner renews while it runs (timed by the
// database's clock, so processes on several machines agree). Resume and
// rerun claim a run atomically: a run with a live owner is refused with an
// *store.OwnedError that names the owner; of two claims at once exactly one
// proceeds. A run whose owner died is interrupted: its lease ran out, or
// its owner was a process on this host that no longer exists. Cancel is a
// request written to the store, with its mode (stop the running nodes, or
// let them finish), that the owner picks up within [Config.CancelPoll] (a
// queued run's is applied on the queue at once, and its workers stop its
// running nodes within a second); so is a signal (Signal), which a run
// nobody owns gets when it is resumed.
//
// # Waiting
//
// An execution given Options.Park ends when its run only waits — for a
// signal, or for timers due later than Park.After — and leaves the run
// waiting: no owner, no lease, its waiting steps and its earliest wake-up
// time on record. Resume continues it with the signals recorded meanwhile
// and the recorded wake-up times (a wait ends when it was due); Due lists
// the waiting runs whose time has come, for a server to resume.
//
// # History
//
// Steps are recorded per generation (the first execution, then one per
// resume) and never deleted but with their run, so a resume killed at any
// instant leaves every completed step on record for the next one. A run's
// final status is committed in the same transaction as its last steps; if
// that write fails the run stays owned until its lease runs out, and is
// then interrupted and resumable.
package runner
