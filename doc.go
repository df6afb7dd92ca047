// Package skein runs Skein workflows from a Go program.
//
// Open an Engine on a folder (runs are kept in its SQLite database,
// skein.db, and its run folders) or on a Postgres database, then start,
// resume, re-run, cancel and signal runs, follow their events and read
// their documents — the same runs the skein command, skein serve and the
// MCP server see:
//
//	eng, err := skein.Open(skein.Config{Dir: ".skein"})
//	if err != nil {
//		return err
//	}
//	defer eng.Close()
//	doc, err := eng.Start(ctx, "hello.yaml", map[string]any{"who": "Ada"}, nil)
//	if err != nil {
//		return err // the workflow is invalid, a secret is missing, the store failed
//	}
//	fmt.Println(doc.Status, doc.Outputs["greeting"]) // completed Hello, Ada!
//
// A run that fails is not an error of Start: its document says so
// (Status failed, Error, the failed step), and Resume continues it, reusing
// every step that succeeded.
//
// The Engine is a thin layer over the application layer every front end of
// Skein uses; the types it returns are re-exported here (RunDoc, Step, Run,
// Event, the statuses and errors), so a program needs no other package of
// Skein than this one, workflow and node. Node kinds of the program's own
// register through package node (Config.Kinds, or node.MustRegister from
// init as the built-in kinds do), beside the built-in kinds of node.Default.
//
// docs/library.md walks through embedding Skein.
package skein
