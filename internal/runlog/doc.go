// Package runlog writes a run's folder: the files a person opens, greps or
// tails to see what a run did (DESIGN §5).
//
// A run lives in
//
//	<root>/runs/<workflow>/<YYYY-MM-DD_HH-MM-SS>_<run id>/
//		run.json        the run: "running" from the start, the run document
//		                (schema/run.schema.json, every step) at the end
//		events.jsonl    every event of the run, one JSON object a line
//		<node>/artifacts/     files the node produced (screenshots, downloads), made by
//		                      the node kind when it has some
//
// where root is usually ".skein" and the time is the run's start in UTC, so
// folders sort by start whatever the machine's time zone. By default there
// is no per-node file: a node's events are the lines of events.jsonl that
// name it (and the database's events table).
//
// A run traced with nodes (workflow.TraceNodes: skein run --trace nodes,
// trace: nodes) adds, when Finish writes the run's document (the run ends
// or waits), for every node with a step:
//
//	<node>/run.json       a NodeRun: the node's visits, each the step as the
//	                      document lists it, with the node's status, times,
//	                      attempts and trace level
//	<node>/events.jsonl   the node's events, every visit's, as the store
//	                      committed them
//
// written from the document's steps (a StepLister) and the events
// TraceNodes reads, which the caller reads from the store once the run's
// records are committed. An on-demand folder is made for them.
//
// The database is the source of truth; the folder is a view of it, written
// off the engine's path. A Writer is the engine's Recorder for one run, but
// Step and Event only buffer: Flush hands the buffer over, through Later
// once the records are committed (the durable recorder's AfterCommit), and
// the Writer's own goroutine writes it. Each handed-over batch is appended
// to events.jsonl in one write, so `tail -f` follows the run one commit
// group at a time. Steps are not written one by one: the database holds
// them, and run.json holds every step once the run ends, so a node gets a
// folder only when it has something to keep (artifacts, a
// verdict) and a long loop costs the same per visit as a short one. Files
// are replaced atomically (temporary file and rename), so a reader never
// sees half a file.
//
// OpenOnDemand is for runs that may not need a folder (skein serve's
// default, where thousands of webhook runs an hour would otherwise cost a
// folder and three files each): the folder is made only when a node asks
// for its artifacts folder, or when something is to be written into it —
// through Materialize, which checks it as Open's folder is checked and
// makes its name durable: the run's first big value (blob.NewRunStore
// calls it), a verdict, a cassette —; then Finish writes run.json there.
// Its events are in the database only. A resume from the command line (Reopen) makes the folder
// of such a run.
//
// Open creates the folder and writes run.json at once, so a run that
// crashes still leaves a readable folder. Finish writes what is still
// queued and the run's document, then syncs the folder once (syncfs(2) on Linux): when it returns the folder is
// complete. Close does the same without a result, for a run that could not
// finish. ArtifactDir returns a node's artifacts folder without creating
// it.
//
// Node ids name folders, so the Writer checks every one it is given, even
// though the workflow package has validated them already: an id must be a
// valid node id ([a-z_][a-z0-9_]*, at most 64 characters), must stay inside
// the run folder, and must not name a symlink or a file already there. File
// operations go through an [os.Root] opened on the run folder, so nothing the
// Writer writes lands outside it.
//
// A Writer is safe for use by several goroutines: the engine records from
// one, node tasks ask for their artifact folders from their own, and Later
// calls back from the committer's.
package runlog
