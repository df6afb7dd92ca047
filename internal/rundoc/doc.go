// Package rundoc is the document of a run (DESIGN §6): the one JSON shape
// of a run that `skein run -o json`, `skein runs show -o json`, the MCP
// tools, the HTTP API and the run folder's run.json print, its JSON Schema
// (schema/run.schema.json), and the listing of the artifacts a queued
// step saved.
//
// It builds a document from records (package record), a verdict and a
// repair report; it reads no store and runs nothing, so every front end
// and the runner share it without importing one another.
package rundoc
