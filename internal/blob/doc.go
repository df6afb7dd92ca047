// Package blob keeps a run's big values out of memory and out of the
// database (DESIGN §7): a text or a list or object bigger than the inline
// limit is written once, content-addressed, to the run folder's blobs/
// folder, and the output that held it holds a *Blob in its place — in the
// scheduler, the step records, the database row, run.json and the result
// document alike. What reads the value gets it back: templates load a Blob
// when an expression reads it (expr.Lazy), and a kind's parameters are
// resolved before it runs (Resolve).
//
// A Blob is encoded in JSON as a reference object,
//
//	{"$skein.blob": {"sha256": "9f86…", "size": 10485760, "type": "text", "path": "/…/blobs/9f86…"}}
//
// which the store decodes back into a Blob (FromRef). The file of a text
// holds its bytes as they are; the file of a list or object holds its
// JSON.
//
// Durability: Store.Put and Writer.Commit return only once the file and
// its name are on disk (fsync of the file and of the folder), so a step
// that refers to a blob is never committed before the blob is.
//
// Secrets: a blob file never holds a secret value. A value that holds one
// is not moved to a file when the store knows the secrets: it stays in memory
// for the live run, and its record is masked and stored as usual.
package blob
