// Package sqlstore is what the two SQL stores, store/sqlite and
// store/postgres, share: the [store.Store] methods written once over a
// small [Dialect], the scanning of rows into the store's types, the JSON
// and time conventions, the fencing of writes by a lease, the arguments of
// the group commit's statements, and the messages of the conditions
// callers tell apart ([Condition]).
//
// A dialect keeps what truly differs: its connections and transactions
// (the [DB] it gives [New]), its migrations, the few SQL fragments that are
// spelt differently ([Dialect]: the database's clock, adding a duration to
// a time, the lesser and greater of two times, a row lock, a lock on a
// key), how its driver takes times, JSON and durations, and the hot write
// path of the group commit (SQLite's prepared multi-row statements,
// Postgres's pipelined batches), which builds on the statements of [SQL].
//
// The SQL here numbers its parameters $1, $2…; a dialect whose driver
// spells them otherwise rewrites them in its [Querier] (SQLite reads ?1,
// ?2…).
package sqlstore
