// Package postgres is the [store.Store] of many machines: the tables of
// store/sqlite in a Postgres database, reached through pgx v5 (pgxpool).
//
// Open takes a postgres:// (or postgresql://) URL. The tables live in the
// URL's database, in its current schema: add search_path=NAME to the URL to
// keep Skein in a schema of its own (the schema must exist). Passwords are
// never printed: errors name the URL with its password replaced by xxxxx
// (see [Redact]). The URL's pgx settings apply: pool_max_conns=N sizes
// the connection pool (default: the larger of 4 and the number of CPUs),
// connect_timeout=S bounds each connection attempt (default 10 s).
//
// The schema is versioned like SQLite's: the numbered files in migrations/
// mirror store/sqlite/migrations one for one (the same version is the same
// tables in both stores), are embedded, and are applied in order, each in
// its own transaction with its schema_migrations row, under an advisory
// lock so that processes opening a new database at once apply each
// migration once. Open refuses, without changing anything, a schema that
// holds tables but no schema_migrations ([store.ErrCorrupt]) and a database
// a newer Skein migrated further than this binary knows
// ([store.ErrNewerSchema]).
//
// Concurrency: the database's own clock (now(), the start of the
// transaction) times leases. Writers that number rows per run (events,
// signals) hold the run's row lock (SELECT … FOR NO KEY UPDATE) while they
// count, so numbers never repeat or skip; conditional updates (claiming a
// run, advancing a schedule) are single UPDATE statements whose WHERE
// clause Postgres checks again on the row it locks, so of several callers
// exactly one wins. SaveBatch (the group commit; AppendEvents too) writes
// every run of the batch in one transaction of two round trips (BEGIN with
// the runs' row locks, taken in id order; then every write with COMMIT).
//
// Compact runs VACUUM on Skein's tables: the space of deleted rows is
// reused by the database; unlike SQLite's VACUUM it is not given back to
// the file system (VACUUM FULL would, but locks the tables against every
// other process).
package postgres
