package blob

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/skeinhq/skein/node"
)

// Folder is the name of a run folder's blobs folder.
const Folder = "blobs"

// Store writes the blobs of one run folder, in <run folder>/blobs/, each
// file named by the SHA-256 of its content, so a value written twice (an
// output passed on by a later node, a resume) is one file. It is safe for
// concurrent use.
type Store struct {
	dir   string
	holds func(string) bool // reports a secret value in a text; nil: none

	mu    sync.Mutex
	ready bool // dir exists and is a folder
}

// Interface guard: kinds write big values through a Store.
var _ node.Blobs = (*Store)(nil)

// NewStore returns the store of the run folder runDir. Nothing is created
// before the first blob. holdsSecret, when not nil, reports whether a text
// holds one of the run's secret values (redact.Redactor.Contains): a value
// that does is never written to a file (see the package doc).
func NewStore(runDir string, holdsSecret func(string) bool) (*Store, error) {
	abs, err := filepath.Abs(filepath.Join(runDir, Folder))
	if err != nil {
		return nil, fmt.Errorf("the blobs folder of %s: %w", runDir, err)
	}
	return &Store{dir: abs, holds: holdsSecret}, nil
}

// RemoveStale removes the temporary files a process that died while it
// wrote blobs left in the folder. Call it before a resumed run writes
// any: no other process writes a run's blobs.
func (s *Store) RemoveStale() error {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return s.fail(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return s.fail(err)
			}
		}
	}
	return nil
}

// Dir is the blobs folder.
func (s *Store) Dir() string { return s.dir }

// secret reports whether text holds a secret value.
func (s *Store) secret(text string) bool {
	return s.holds != nil && s.holds(text)
}

// Put keeps text in a blob and returns the Blob, or text itself when it
// holds a secret value.
func (s *Store) Put(text string) (any, error) {
	if s.secret(text) {
		return text, nil
	}
	sum := sha256.Sum256(bytesOf(text))
	return s.write(Text, hex.EncodeToString(sum[:]), int64(len(text)), func(f *os.File) error {
		_, err := f.WriteString(text)
		return err
	})
}

// PutJSON keeps a list or object in a blob, as JSON, and returns the Blob;
// it returns v itself when v holds a secret value or cannot be written as
// JSON losslessly (a string that is not UTF-8, a NaN). The JSON is written
// as it is encoded, an item at a time.
func (s *Store) PutJSON(v any) (any, error) {
	if !jsonSafe(v, 0) {
		return v, nil
	}
	w, err := s.create(JSON)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := writeJSON(bw, v, 0); err != nil {
		w.Abort()
		return nil, s.fail(err)
	}
	if err := bw.Flush(); err != nil {
		w.Abort()
		return nil, err
	}
	nv, err := w.Commit()
	if _, isText := nv.(string); isText {
		return v, nil // it holds a secret: v stays as it is
	}
	return nv, err
}

// writeJSON writes v as compact JSON, as encoding/json would (map keys
// sorted, <, > and & not escaped), one list item or object member at a
// time.
func writeJSON(w *bufio.Writer, v any, depth int) error {
	switch x := v.(type) {
	case []any:
		w.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeJSON(w, e, depth+1); err != nil {
				return err
			}
		}
		return w.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeLeaf(w, k); err != nil {
				return err
			}
			w.WriteByte(':')
			if err := writeJSON(w, x[k], depth+1); err != nil {
				return err
			}
		}
		return w.WriteByte('}')
	}
	return writeLeaf(w, v)
}

func writeLeaf(w *bufio.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return err
}

// write makes the blob sum unless it exists: a temporary file filled by
// fill, synced, renamed to its name, and the folder synced.
func (s *Store) write(typ, sum string, size int64, fill func(*os.File) error) (*Blob, error) {
	b := &Blob{sum: sum, size: size, typ: typ, path: filepath.Join(s.dir, sum)}
	if s.has(b.path, size) {
		return b, nil
	}
	if err := s.mkdir(); err != nil {
		return nil, err
	}
	f, err := s.temp()
	if err != nil {
		return nil, err
	}
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.place(f.Name(), b.path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, s.fail(err)
	}
	return b, nil
}

// temp creates a temporary file in the blobs folder, readable like the
// other files of the run folder.
func (s *Store) temp() (*os.File, error) {
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err == nil {
		err = f.Chmod(0o644)
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}
	if err != nil {
		return nil, s.fail(err)
	}
	return f, nil
}

// place renames the finished temporary file tmp to path and syncs the
// folder, so the name is on disk when it returns.
func (s *Store) place(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(s.dir)
}

// has reports whether the blob at path was written already.
func (s *Store) has(path string, size int64) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

func (s *Store) fail(err error) error {
	return fmt.Errorf("writing a big value to %s: %w", s.dir, err)
}

// mkdir creates the blobs folder, refusing a symlink or a file in its
// place, and syncs the run folder so that its name is on disk.
func (s *Store) mkdir() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return nil
	}
	err := os.Mkdir(s.dir, 0o755)
	created := err == nil
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return s.fail(err)
	}
	fi, err := os.Lstat(s.dir)
	if err != nil {
		return s.fail(err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("writing a big value: %s is not a folder (a symlink or a file stands there); remove it and run again", s.dir)
	}
	if created {
		if err := syncDir(filepath.Dir(s.dir)); err != nil {
			return s.fail(err)
		}
	}
	s.ready = true
	return nil
}

// Adopt returns b as a blob of this store: b itself when it is one; else
// its file is linked (or copied) into this store's folder, so that it
// lives as long as this run does (a pinned output of another run).
func (s *Store) Adopt(b *Blob) (any, error) {
	if filepath.Dir(b.path) == s.dir {
		return b, nil
	}
	nb := &Blob{sum: b.sum, size: b.size, typ: b.typ, path: filepath.Join(s.dir, b.sum)}
	if s.has(nb.path, nb.size) {
		return nb, nil
	}
	if err := s.mkdir(); err != nil {
		return nil, err
	}
	tmp := filepath.Join(s.dir, ".tmp-link-"+b.sum)
	_ = os.Remove(tmp)
	if err := os.Link(b.path, tmp); err == nil {
		if err := s.place(tmp, nb.path); err != nil {
			_ = os.Remove(tmp)
			return nil, s.fail(err)
		}
		return nb, nil
	}
	// Another file system, or links not allowed: copy.
	src, err := b.Open()
	if err != nil {
		return nil, err
	}
	defer src.Close()
	w, err := s.create(b.typ)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(w, src); err != nil {
		w.Abort()
		return nil, s.fail(err)
	}
	return w.Commit()
}

// Create starts a text blob written piece by piece (node.Blobs).
func (s *Store) Create() (node.BlobWriter, error) {
	return s.create(Text)
}

func (s *Store) create(typ string) (*Writer, error) {
	if err := s.mkdir(); err != nil {
		return nil, err
	}
	f, err := s.temp()
	if err != nil {
		return nil, err
	}
	return &Writer{s: s, f: f, h: sha256.New(), typ: typ}, nil
}

// Writer writes one blob piece by piece. It is not safe for concurrent
// use.
type Writer struct {
	s    *Store
	f    *os.File
	h    hash.Hash
	typ  string
	n    int64
	err  error
	done bool
}

// Interface guard.
var _ node.BlobWriter = (*Writer)(nil)

// Write appends p.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.done {
		return 0, errors.New("writing a big value: the blob is closed")
	}
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	if err != nil {
		w.err = w.s.fail(err)
	}
	return n, w.err
}

// Commit ends the blob and returns it, or its text when it holds a secret
// value (the file is then removed). The blob is on disk when Commit
// returns.
func (w *Writer) Commit() (any, error) {
	if w.done {
		return nil, errors.New("writing a big value: the blob is closed")
	}
	w.done = true
	tmp := w.f.Name()
	err := w.err
	if err == nil {
		if err = w.f.Sync(); err != nil {
			err = w.s.fail(err)
		}
	}
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = w.s.fail(cerr)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	if w.s.holds != nil {
		data, err := os.ReadFile(tmp)
		if err != nil {
			_ = os.Remove(tmp)
			return nil, w.s.fail(err)
		}
		if w.s.secret(unsafe.String(unsafe.SliceData(data), len(data))) {
			_ = os.Remove(tmp)
			return string(data), nil
		}
	}
	b := &Blob{sum: hex.EncodeToString(w.h.Sum(nil)), size: w.n, typ: w.typ}
	b.path = filepath.Join(w.s.dir, b.sum)
	if w.s.has(b.path, b.size) {
		_ = os.Remove(tmp)
		return b, nil
	}
	if err := w.s.place(tmp, b.path); err != nil {
		_ = os.Remove(tmp)
		return nil, w.s.fail(err)
	}
	return b, nil
}

// Abort drops the blob.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	_ = w.f.Close()
	_ = os.Remove(w.f.Name())
}

// syncDir makes the names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// bytesOf views s as bytes, for hashing without a copy; they must not be
// modified.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// jsonSafe reports whether v encodes to JSON that decodes to the same
// value: every string (and key) UTF-8, no value JSON cannot hold.
func jsonSafe(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, int, int64, *Blob:
		return true
	case float64:
		return x == x && x-x == 0 // not NaN, not ±Inf
	case string:
		return utf8.ValidString(x)
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) || !jsonSafe(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !jsonSafe(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
