// Package runlog writes a run's folder: the files a person opens, greps or
// tails to see what a run did (DESIGN §5).
//
// A run lives in
//
//	<root>/runs/<workflow>/<YYYY-MM-DD_HH-MM-SS>_<run id>/
//		run.json        the run: "running" from the start, the full result at the end
//		events.jsonl    every event of the run, one JSON object a line
//		<node>/run.json       {"node": id, "steps": [...]}, the node's steps in step_order
//		<node>/events.jsonl   the node's events
//		<node>/artifacts/     files the node produced (screenshots, downloads)
//
// where root is usually ".skein" and the time is the run's start in UTC, so
// folders sort by start whatever the machine's time zone.
//
// A Writer is the engine's Recorder for one run. Open creates the folder and
// writes run.json at once, so a run that crashes still leaves a readable
// folder. Step keeps the latest record of each (node, visit) and rewrites the
// node's run.json atomically (temporary file and rename), so a reader never
// sees half a file. Event appends a line to events.jsonl, and to the node's
// events.jsonl when the event belongs to a node, flushing after every line so
// `tail -f` follows the run; nothing is fsynced until Finish, which writes the
// result and syncs the files. Close releases the files of a run that could
// not finish.
//
// Node ids name folders, so the Writer checks every one it is given, even
// though the workflow package has validated them already: an id must be a
// valid node id ([a-z_][a-z0-9_]*, at most 64 characters), must stay inside
// the run folder, and must not name a symlink or a file already there. File
// operations go through an [os.Root] opened on the run folder, so nothing the
// Writer writes lands outside it.
//
// A Writer is safe for use by several goroutines: the engine records from
// one, while node tasks ask for their artifact folders from their own.
package runlog
