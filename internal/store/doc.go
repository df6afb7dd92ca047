// Package store is where Skein keeps what outlives a process: versioned
// workflows, runs, their steps and events, from which a run resumes
// (DESIGN §3, §5).
//
// The package holds the row types and the [Store] interface (with its
// transaction, [Tx]) only. An implementation lives in a subpackage:
// store/sqlite for one machine (.skein/skein.db), and store/postgres for
// many. Both are written over one core, store/sqlstore, which holds what
// they share (the methods, scanning, JSON and time conventions, leases,
// the group commit's statements); each keeps its connections, migrations
// and the SQL it spells its own way. Every implementation must pass the
// conformance suite in store/storetest, which is the executable form of
// the contract documented here.
//
// Conventions every implementation keeps:
//
//   - Errors are matched with errors.Is: [ErrNotFound] for an unknown run,
//     workflow or token, [ErrExists] for a run id used twice,
//     [ErrLocked] when the database stays locked by someone else past the busy
//     timeout, [ErrCorrupt] when the file is not a Skein database or is
//     damaged, [ErrNewerSchema] when a newer Skein wrote the database.
//   - Maps (inputs, outputs, parameters, event data, error details) are stored
//     as JSON. A nil map comes back nil and an empty map comes back empty.
//     JSON numbers that are whole and fit in an int come back as int; the
//     others come back as float64, so outputs round-trip the way the engine
//     produces them (an exit code stays an int).
//   - Times are kept to the microsecond and come back in UTC.
//   - Big values are not the store's business: the caller keeps them in a
//     blob store (package blob), and a map holds a *blob.Blob in their place,
//     stored as its reference object and decoded back into a *blob.Blob.
//     Steps recorded before blobs existed may have their whole output in a
//     file instead: [Step.OutputRef] names it and [Step.Output] is nil.
package store
