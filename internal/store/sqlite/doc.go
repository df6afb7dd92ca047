// Package sqlite is the [store.Store] of one machine: a SQLite file
// (.skein/skein.db) opened through the pure-Go driver modernc.org/sqlite.
//
// The file runs in WAL mode with synchronous=NORMAL, foreign keys on and a
// busy timeout (5 s unless [Options] say otherwise). Writes go through one
// connection, each in a BEGIN IMMEDIATE transaction, so they queue in the
// process instead of fighting over the lock; reads use a small pool of
// read-only connections and never wait for a writer.
//
// The schema is versioned: the numbered files in migrations/ are embedded
// and applied in order, each in its own transaction, and recorded in the
// schema_migrations table. Open refuses, without changing anything, a file
// that is not SQLite, a SQLite file that holds tables but no Skein schema
// ([store.ErrCorrupt]) and a database a newer Skein migrated further than
// this binary knows ([store.ErrNewerSchema]). A database is never reset or
// recreated.
package sqlite
