// Package shell implements the shell node kind: it runs one command per
// attempt and returns {stdout, stderr, exit_code, truncated}, plus json when
// stdout is JSON.
//
// The command is an argv list. Each element was rendered as a template by the
// engine and is passed to the program as one argument, whatever it holds
// (spaces, quotes, ";", "$(...)"): nothing is joined into a string or read by
// a shell. Only shell: true runs a command through /bin/sh -c, and then
// templated values in the script are not quoted; pass them as further list
// elements, which the script reads as "$1", "$2", ….
//
// A program reads an argument that begins with "-" as an option, so data
// could become one: [git, clone, "{{ inputs.repo }}"] with repo
// "--upload-pack=…" runs a command. An argv element whose first character
// comes from a template and that renders to text beginning with "-" ("-"
// alone excepted) therefore fails the node before the program starts,
// unless a literal "--" element precedes it or the node sets
// allow_option_args: true. Kinds learn which elements were templated from
// node.Call.Written. With shell: true nothing is checked: the script is the
// program, and it should write `--` before "$1" where it passes one to a
// program that takes options. skein validate warns about every templated
// element the rule could refuse.
//
// The child's environment is explicit: PATH, HOME, LANG, TMPDIR and USER
// taken from Skein's own environment, plus the node's env (and, on Linux,
// the tag proc.Start adds: SKEIN_PROC_STARTING). Nothing else is
// inherited, so a secret in Skein's environment reaches only the commands it
// is given to.
//
// Each command runs in its own process group. When the node's context ends
// (its timeout, or the run's cancel) the group gets SIGTERM, then SIGKILL
// after a short grace, and Run returns a timeout or cancelled error once the
// command is reaped. Processes a command leaves in the background when it
// exits normally are not stopped, but Run waits only briefly for them to
// close its stdout and stderr; redirect their output (cmd > log 2>&1 &) to
// keep them going.
//
// A command dies with Skein: on Linux the kernel kills it when Skein dies,
// even of SIGKILL. Processes it started are not reached that way; the group
// is reported through node.Call.ProcessStarted as soon as the command
// starts, so the engine records it on the running step and a resume kills
// what is left of it before the node runs again.
//
// A JSON object on stdout may carry directives: its top-level keys that begin
// with "_" (_route, _state_patch, …) are copied to the top of the result, so
// a script routes by printing {"_route": "b"}.
package shell
