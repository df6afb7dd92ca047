// Package blob keeps a run's big values out of memory and out of the
// database rows (DESIGN §7): a text or a list or object bigger than the
// inline limit is written once, content-addressed, to a blob store, and
// the output that held it holds a *Blob in its place — in the scheduler,
// the step records, the database row, run.json and the result document
// alike. What reads the value gets it back: templates load a Blob when an
// expression reads it (expr.Lazy), and a kind's parameters are resolved
// before it runs (Resolve).
//
// A Store writes through a Backend, of which there are three:
//
//   - the run folder's blobs/ folder (NewStore; NewRunStore for a run
//     folder made on demand, which it makes before the first blob), the
//     default of local and served runs: each blob a file named by its
//     SHA-256;
//   - a shared folder every worker mounts (NewShared, skein worker
//     --blobs DIR): files <dir>/<aa>/<digest>;
//   - the Postgres database of a distributed set-up (store/postgres
//     Store.Blobs): the table blobs and its chunks, the default of skein
//     worker, skein serve and skein run with --db postgres://….
//
// blobtest is the conformance suite every backend passes.
//
// A Blob is encoded in JSON as a reference object. A run folder's names
// the file,
//
//	{"$skein.blob": {"sha256": "9f86…", "size": 10485760, "type": "text", "path": "/…/blobs/9f86…"}}
//
// and a shared store's names its kind instead of a path of the machine
// that wrote it, so a step a worker wrote is read by another worker or by
// the server:
//
//	{"$skein.blob": {"sha256": "9f86…", "size": 10485760, "type": "text", "store": "postgres"}}
//
// The store decodes either back into a Blob (FromRef). A process reads the
// references of a shared kind through the backends it mounted (Mount); a
// blob read from one is checked against its digest. The file of a text
// holds its bytes as they are; the file of a list or object holds its
// JSON.
//
// Durability: Store.Put and Writer.Commit return only once the blob is
// durable (the file and its folder synced; the rows committed), so a step
// that refers to a blob is never committed before the blob is.
//
// Secrets: a blob never holds a secret value. A value that holds one
// is not moved to a blob when the store knows the secrets: it stays in
// memory for the live run, and its record is masked and stored as usual.
package blob
