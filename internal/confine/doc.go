// Package confine keeps the paths a file names inside a folder.
//
// A workflow names child workflows, a test file names its workflow and its
// cassettes, a workflow's lock file lies beside it: each such path must
// stay inside the folder of the file that names it (or a folder declared
// for it, such as a workflow's files:). Resolve checks that after every
// symlink is resolved — for a file yet to be written, those of its deepest
// existing ancestor, and the target of a dangling symlink — so neither
// `..`, an absolute path nor a symlink leads out. WriteFile then writes
// beneath the folder through os.Root, so a symlink swapped in after the
// check cannot lead out either.
//
// A refusal is an *EscapeError (errors.Is(err, ErrEscapes)); the caller
// adds the file and line that named the path and what to do about it.
package confine
