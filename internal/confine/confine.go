package confine

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrEscapes is the condition of every *EscapeError.
var ErrEscapes = errors.New("the path leads outside its folder")

// EscapeError says a path leads outside the folders it must stay in.
type EscapeError struct {
	// Name is the path as written.
	Name string
	// Real is where it leads: absolute, every symlink resolved.
	Real string
	// Symlink is set when the path as written lies inside a folder and a
	// symlink leads it out.
	Symlink bool
	// Dirs are the folders it must stay in, absolute, as given.
	Dirs []string
}

func (e *EscapeError) Error() string {
	how := "leads to"
	if e.Symlink {
		how = "leads through a symlink to"
	}
	return fmt.Sprintf("%q %s %s, outside %s", e.Name, how, e.Real, strings.Join(e.Dirs, " and "))
}

// Is makes errors.Is(err, ErrEscapes) true.
func (e *EscapeError) Is(target error) bool { return target == ErrEscapes }

// maxLinks bounds the symlinks followed while resolving one path, as the
// kernel does (ELOOP).
const maxLinks = 40

// Resolve returns where name leads — absolute, every symlink resolved —
// when that is inside one of dirs, else an *EscapeError. A relative name
// is relative to dirs[0]; dirs are made absolute against the working
// directory. A name that does not exist yet (a file to write) resolves
// through its deepest existing ancestor, a dangling symlink through its
// target. Other failures (a loop of symlinks, a permission) are returned
// as they are.
func Resolve(name string, dirs ...string) (string, error) {
	real, _, err := resolve(name, dirs)
	return real, err
}

// resolve is Resolve that also returns the resolved folder real lies in.
func resolve(name string, dirs []string) (real, dir string, err error) {
	if len(dirs) == 0 {
		return "", "", fmt.Errorf("confine: no folder to resolve %q in", name)
	}
	abs := make([]string, len(dirs))
	for i, d := range dirs {
		if abs[i], err = filepath.Abs(d); err != nil {
			return "", "", err
		}
	}
	full := name
	if !filepath.IsAbs(full) {
		full = filepath.Join(abs[0], full)
	}
	full = filepath.Clean(full)
	budget := maxLinks
	real, err = realPath(full, &budget)
	if err != nil {
		return "", "", err
	}
	lexical := false
	for _, d := range abs {
		rd, err := realPath(d, &budget)
		if err != nil {
			continue // a folder that is not there holds nothing
		}
		if Within(rd, real) {
			return real, rd, nil
		}
		lexical = lexical || Within(d, full)
	}
	return "", "", &EscapeError{Name: name, Real: real, Symlink: lexical, Dirs: abs}
}

// realPath is p (absolute, clean) with every symlink resolved; the part
// that does not exist is kept as written.
func realPath(p string, budget *int) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	parent := filepath.Dir(p)
	if parent == p {
		return "", err
	}
	rp, err := realPath(parent, budget)
	if err != nil {
		return "", err
	}
	here := filepath.Join(rp, filepath.Base(p))
	fi, lerr := os.Lstat(here)
	if lerr != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return here, nil // not there: it would be made here
	}
	// A dangling symlink: a file written there is made at its target.
	if *budget--; *budget < 0 {
		return "", &fs.PathError{Op: "resolve", Path: p, Err: errors.New("too many levels of symbolic links")}
	}
	target, err := os.Readlink(here)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(rp, target)
	}
	return realPath(filepath.Clean(target), budget)
}

// Within reports whether path is dir or lies beneath it; both are clean
// absolute paths, compared as written.
func Within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// WriteFile writes data to the file name leads to, when that is inside
// one of dirs (Resolve), making the folders on the way. The file is
// written beneath its folder through os.Root, to a temporary file renamed
// over it: a reader sees the old content or the new one, and a symlink
// changed after the check cannot lead the write out.
func WriteFile(name string, data []byte, perm fs.FileMode, dirs ...string) error {
	real, dir, err := resolve(name, dirs)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, real)
	if err != nil {
		return err
	}
	if rel == "." {
		return &fs.PathError{Op: "write", Path: name, Err: errors.New("is a folder")}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if sub := filepath.Dir(rel); sub != "." {
		if err := root.MkdirAll(sub, 0o755); err != nil {
			return err
		}
	}
	return Replace(root, rel, data, perm)
}

// Replace writes data to rel beneath root through a temporary file beside
// it, renamed over: a reader sees the old content or the new one.
func Replace(root *os.Root, rel string, data []byte, perm fs.FileMode) error {
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+"."+rand.Text()[:8])
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}
