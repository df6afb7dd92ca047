package node

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxFileRead is the most bytes Files.Read returns for one file: 20 MiB.
// Files are read to be sent to a model (images), and no provider takes a
// larger image (OpenAI accepts up to 20 MB an image, Anthropic 5 MB), so a
// larger file is refused before it is held in memory.
const MaxFileRead = 20 << 20

// Error codes of Files.Read. Every refusal is in the validation category.
const (
	// CodeFileNotAllowed: the file is outside the readable folders (after
	// symlinks are resolved), or it is not a regular file.
	CodeFileNotAllowed = "file_not_allowed"
	// CodeFileNotFound: the path, inside a readable folder, names nothing.
	CodeFileNotFound = "file_not_found"
	// CodeFileTooLarge: the file is larger than MaxFileRead.
	CodeFileTooLarge = "file_too_large"
	// CodeFileUnreadable: the file is allowed but reading it failed
	// (permissions, I/O).
	CodeFileUnreadable = "file_unreadable"
)

// Files is a run's file-access policy: which files a node may read when
// one of its parameters names a file whose bytes it sends on (an llm
// node's images, the judge's evidence screenshots). Kinds read such files
// through Call.Files, never with os.ReadFile, since the path may come from
// an upstream output that nothing vouches for.
//
// A file is readable when it is a regular file inside one of the allowed
// folders — the run's folder (where node artifacts are saved) and the
// folders the workflow declares under files: — checked after every symlink
// in its path and in the folders' paths is resolved, so neither `..` nor a
// symlink leads out. The file is then opened beneath its folder with
// os.Root, so a symlink swapped in after the check cannot lead out either.
// A relative path is resolved against the base folder, the workflow file's
// folder. Reads are capped at MaxFileRead.
//
// A nil *Files, like the zero Files, allows nothing. A Files is immutable
// and safe for concurrent use.
type Files struct {
	base  string
	roots []string
}

// NewFiles returns the policy allowing the files under roots. base is the
// folder relative paths resolve against, roots included; both are made
// absolute against the working directory when relative. Roots need not
// exist yet (an artifact folder is made on first use): each is resolved
// when a file is read.
func NewFiles(base string, roots ...string) *Files {
	if abs, err := filepath.Abs(base); err == nil {
		base = abs
	}
	f := &Files{base: filepath.Clean(base)}
	for _, r := range roots {
		if r == "" {
			continue
		}
		full := f.abs(r)
		dup := false
		for _, have := range f.roots {
			dup = dup || have == full
		}
		if !dup {
			f.roots = append(f.roots, full)
		}
	}
	return f
}

// Base is the folder relative paths resolve against ("" for a nil or zero
// Files).
func (f *Files) Base() string {
	if f == nil {
		return ""
	}
	return f.base
}

// Roots are the allowed folders, absolute, as given (symlinks unresolved).
func (f *Files) Roots() []string {
	if f == nil {
		return nil
	}
	return append([]string(nil), f.roots...)
}

// abs makes path absolute against the base folder and cleans it.
func (f *Files) abs(path string) string {
	if !filepath.IsAbs(path) && f != nil && f.base != "" {
		path = filepath.Join(f.base, path)
	}
	return filepath.Clean(path)
}

// root is an allowed folder: as given and with its symlinks resolved.
type root struct{ given, real string }

func (f *Files) resolved() []root {
	if f == nil {
		return nil
	}
	out := make([]root, 0, len(f.roots))
	for _, r := range f.roots {
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue // not there (yet): nothing under it can be read
		}
		out = append(out, root{given: r, real: real})
	}
	return out
}

// within reports whether path is dir or lies beneath it; both are clean
// absolute paths.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Read returns the content of the file at path when the policy allows it,
// else a *Error (category validation) whose code says why: file_not_allowed
// (outside the allowed folders, or not a regular file), file_not_found,
// file_too_large, file_unreadable. The message names the path and what to
// do about it.
func (f *Files) Read(path string) ([]byte, error) {
	if path == "" {
		return nil, fileError(CodeFileNotFound, path, "", "the file path is empty", nil)
	}
	full := f.abs(path)
	roots := f.resolved()
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		lexical := false
		for _, r := range roots {
			lexical = lexical || within(r.given, full) || within(r.real, full)
		}
		switch {
		case !lexical:
			// Whether it exists or not, it is not ours to look at.
			return nil, f.notAllowed(path, full, "")
		case errors.Is(err, fs.ErrNotExist):
			return nil, fileError(CodeFileNotFound, path, full, fmt.Sprintf("%q does not exist (looked for %s)", path, full), nil)
		default:
			return nil, fileError(CodeFileUnreadable, path, full, fmt.Sprintf("%q cannot be read: %v", path, unwrapPath(err)), err)
		}
	}
	for _, r := range roots {
		if within(r.real, real) {
			rel, err := filepath.Rel(r.real, real)
			if err != nil {
				break
			}
			return f.readIn(r.real, rel, path, full)
		}
	}
	return nil, f.notAllowed(path, full, real)
}

// readIn reads rel beneath dir through os.Root, refusing what is not a
// regular file or is too large.
func (f *Files) readIn(dir, rel, path, full string) ([]byte, error) {
	rt, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fileError(CodeFileUnreadable, path, full, fmt.Sprintf("%q cannot be read: %v", path, unwrapPath(err)), err)
	}
	defer rt.Close()
	check := func(fi fs.FileInfo) error {
		if !fi.Mode().IsRegular() {
			return fileError(CodeFileNotAllowed, path, full,
				fmt.Sprintf("%q is %s, not a regular file; only regular files can be read", path, describeMode(fi.Mode())), nil)
		}
		if fi.Size() > MaxFileRead {
			return tooLarge(path, full, fi.Size())
		}
		return nil
	}
	fi, err := rt.Stat(rel)
	if err != nil {
		return nil, f.openError(path, full, err)
	}
	if err := check(fi); err != nil {
		return nil, err
	}
	// Non-blocking where the system has it, so a file swapped for a named
	// pipe after the check cannot hang the open; the Stat below refuses it.
	fh, err := rt.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, f.openError(path, full, err)
	}
	defer fh.Close()
	if fi, err = fh.Stat(); err != nil {
		return nil, f.openError(path, full, err)
	}
	if err := check(fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileRead+1))
	if err != nil {
		return nil, fileError(CodeFileUnreadable, path, full, fmt.Sprintf("reading %q: %v", path, unwrapPath(err)), err)
	}
	if len(data) > MaxFileRead {
		return nil, tooLarge(path, full, int64(len(data)))
	}
	return data, nil
}

// openError reports a failure to stat or open a file that resolved inside
// a folder: os.Root refuses one that a symlink, changed since the check,
// now leads out of it.
func (f *Files) openError(path, full string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileError(CodeFileNotFound, path, full, fmt.Sprintf("%q does not exist (looked for %s)", path, full), err)
	case strings.Contains(err.Error(), "path escapes from parent"): // os.Root's unexported errPathEscapes
		return f.notAllowed(path, full, "")
	}
	return fileError(CodeFileUnreadable, path, full, fmt.Sprintf("%q cannot be read: %v", path, unwrapPath(err)), err)
}

func (f *Files) notAllowed(path, full, real string) error {
	allowed := "none are declared"
	if f != nil && len(f.roots) > 0 {
		allowed = strings.Join(f.roots, ", ")
	}
	what := fmt.Sprintf("%q", path)
	if real != "" && real != full {
		what = fmt.Sprintf("%q leads to %s, which is", path, real)
	} else if full != path {
		what = fmt.Sprintf("%q (%s) is", path, full)
	} else {
		what += " is"
	}
	e := fileError(CodeFileNotAllowed, path, full,
		fmt.Sprintf("%s outside the folders this workflow may read (%s); add its folder to `files:` in the workflow", what, allowed), nil)
	e.Details["allowed"] = f.Roots()
	if real != "" && real != full {
		e.Details["resolved"] = real
	}
	return e
}

func tooLarge(path, full string, size int64) error {
	return fileError(CodeFileTooLarge, path, full,
		fmt.Sprintf("%q is %.1f MiB; a file read for a node may be at most %d MiB", path, float64(size)/(1<<20), MaxFileRead>>20), nil)
}

func fileError(code, path, full, msg string, err error) *Error {
	d := map[string]any{"path": path}
	if full != "" && full != path {
		d["absolute"] = full
	}
	return &Error{Code: code, Category: CategoryValidation, Message: msg, Details: d, Err: err,
		Permanent: code != CodeFileUnreadable && code != CodeFileNotFound}
}

// describeMode names a kind of file that is not a regular one.
func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "a special file"
}

// unwrapPath drops the path a *fs.PathError repeats, since messages name
// the path already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
