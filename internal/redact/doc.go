// Package redact masks a run's secret values in everything Skein records
// and shows: step parameters, outputs, directives and errors, events, the
// run's outputs and error, verdicts, the repair loop's prompts and notes.
//
// A Redactor is made once per run from the run's secrets (New) and handed
// to every writer of the run: the engine masks the records it makes with
// it, and the writers at the boundary — the durable recorder (the
// database, the blobs it writes), the run folder's writer (events.jsonl,
// run.json), the verdict writer, the run document every front end prints
// — pass what they encode through it again, so a record that reaches the
// disk or the screen by a new way is masked all the same. A record masked
// once goes through again without a copy: the methods copy only what
// holds a secret.
//
// A secret is masked as written when it is MinLen bytes or more, and in
// the forms a program prints it in when it encodes it on its own — base64,
// URL-encoded, hex, JSON-escaped — when it is MinEncodedLen bytes or more.
package redact
