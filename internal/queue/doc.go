// Package queue runs workflows on many machines: the queue driver. The
// nodes of a run are jobs of River (github.com/riverqueue/river), a job
// queue in the Postgres database that holds the runs, so a change of a
// run's state and the jobs it makes commit in one transaction.
//
// The scheduler (engine.Run) is pure but its state is not serializable;
// what is stored instead is the run's history: every event the scheduler
// was fed — the start, each task's outcome, each timer that fired, each
// signal, the cancel — in order, in the table skein_queue_log. A run's
// state is engine.NewRun(plan) with that history replayed; workers keep the
// state they rebuilt, keyed by the last event applied, and replay only
// what other workers added since.
//
// A worker that finishes a node, in one transaction: locks the run's row
// (SELECT … FOR UPDATE, so a join fires exactly once however many workers
// finish its inputs at once); catches its state up with the history;
// checks the task is still running (the attempt token: an outcome of a
// task that was already recorded, by a worker the job was taken from after
// its lease, changes nothing); appends the outcome to the history and
// applies it; writes the steps and events it changed, and the run's final
// record when it ended; and inserts the River jobs of the tasks it
// starts. Its statements go out pipelined (postgres.Pipe): the BEGIN
// with the row lock and the history read, the writes in front of River's
// insert of the jobs, River's notification with the COMMIT — three round
// trips; the run's row counts its events, so their numbering needs no
// read of its own. Timers (retry backoff, _delay_seconds, wait) are jobs scheduled
// for when they fire, never a sleeping worker (River makes a scheduled job
// available within its scheduler's interval, 5 s). Cancel requests and
// signals are rows in the store that every worker polls (Config.Poll); a
// job whose run is asked to cancel does not start its node. A cancel is
// also applied at once by the process that asks (Driver.Cancel): the
// run's jobs no worker took are cancelled with it, and the workers running
// its nodes stop them at their next poll unless the request lets them
// finish (cancel.go).
//
// A node that releases the next node of its run onto a queue its worker
// works has that worker take the next node's job in the same transaction
// (continue.go): the job is marked running on this worker before the
// COMMIT, its node marked running in that transaction, and the worker
// runs it next on the same slot, without River's notification and fetch
// or a transaction of its own to begin it. The job stays River's, so a worker lost while
// it runs such a node is handled as any other (rescue.go). A node of a
// pure kind released so runs inside that transaction instead, with no job
// (pure.go): a chain of them is one transaction.
//
// Starting a run (Driver.Start) inserts the run's row, its first history
// event and the first jobs in one transaction. While it runs, a queue run
// is owned by OwnerHost with a lease that does not run out, so no takeover
// claims it; its final record releases it, and a failed or cancelled run
// can then be resumed by any process (its steps carry their config hashes).
//
// A worker keeps no run folder. Before it records a node's outcome, it
// moves the outcome's big values (package blob) and the files the node
// saved in its artifacts folder (a temporary folder of the worker) to the
// shared blob store (Config.Blobs: the database's blobs table, or a folder
// every worker mounts); the step refers to them by store and digest, and
// lists the artifacts in its ArtifactsKey directive. Those writes happen
// before the transaction, on their own connection.
//
// A transaction never waits for a second connection of the pool while it
// holds one, so workers whose jobs outnumber the connections wait for a
// connection, never for each other. A worker that stops (Driver.Work's
// grace ran out) records nothing for the nodes it stopped and puts their
// steps back to pending: River gives their jobs to a worker again.
//
// Faults (rescue.go): each worker holds a lease, renewed in the database.
// The attempts of a worker whose lease ran out (killed, paused, cut off)
// are recorded as failed (worker_lost) by another worker, and the node's
// retries decide; the lost worker, if it comes back, cannot record over
// them (the attempt token). A job it took from River but whose node it
// had not begun goes to another worker, the same attempt. A worker renews its lease
// apart from the rest of its work. A job runs its node at most once: River
// handing a job out again after its node began records the loss instead.
// Work on the database that fails because the database is unreachable is
// retried with backoff (postgres.Transient), so a restart of the database
// costs no node a second run.
package queue
