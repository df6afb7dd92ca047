// Package sqlite is the [store.Store] of one machine: a SQLite file
// (.skein/skein.db) opened through the pure-Go driver modernc.org/sqlite.
//
// Durability: the file runs in WAL mode with synchronous=NORMAL. A
// committed transaction (a step shown done) survives the crash or kill of
// the process, being in the write-ahead log; a power loss or OS crash may
// lose the last transactions before it, never the database's consistency,
// and a resume runs the lost steps again. synchronous=FULL, which would
// make a step shown done survive power loss too, was measured (see
// BENCHMARKS.md): +7 µs a node through `skein run`, but 200 concurrent
// runs fell from ~19,500 to ~14,000 steps/s, under the 20,000 target,
// because every group commit then waits for an fsync of the log.
//
// The file runs in WAL mode with synchronous=NORMAL, foreign keys on and a
// busy timeout (5 s unless [Options] say otherwise). Writes go through one
// connection, each in a BEGIN IMMEDIATE transaction, so they queue in the
// process instead of fighting over the lock; reads use a small pool of
// read-only connections and never wait for a writer.
//
// The schema is versioned: the numbered files in migrations/ are embedded
// and the pending ones applied in order, in one transaction, and recorded
// in the schema_migrations table. A new database is not migrated: it is a
// copy of the database the migrations build (fresh.db.gz, checked against
// them by a test), written whole under a temporary name and linked into
// place. Open refuses, without changing anything, a file
// that is not SQLite, a SQLite file that holds tables but no Skein schema
// ([store.ErrCorrupt]) and a database a newer Skein migrated further than
// this binary knows ([store.ErrNewerSchema]). A database is never reset or
// recreated.
package sqlite
