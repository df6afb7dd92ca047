package blob

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"unicode/utf8"
	"unsafe"

	"github.com/skeinhq/skein/node"
)

// Folder is the name of a run folder's blobs folder.
const Folder = "blobs"

// Store writes the blobs of a run through a Backend, each named by the
// SHA-256 of its content, so a value written twice (an output passed on by
// a later node, a resume) is kept once. It keeps no secret value (see the
// package doc). It is safe for concurrent use.
type Store struct {
	be    Backend
	holds func(string) bool // reports a secret value in a text; nil: none
}

// Interface guard: kinds write big values through a Store.
var _ node.Blobs = (*Store)(nil)

// NewStore returns the store of the run folder runDir: its blobs are the
// files <runDir>/blobs/<digest>, referenced by path. Nothing is created
// before the first blob, and runDir must exist by then (NewRunStore makes
// it). holdsSecret, when not nil, reports whether a text
// holds one of the run's secret values (redact.Redactor.Contains): a value
// that does is never written to a file (see the package doc).
func NewStore(runDir string, holdsSecret func(string) bool) (*Store, error) {
	abs, err := filepath.Abs(filepath.Join(runDir, Folder))
	if err != nil {
		return nil, fmt.Errorf("the blobs folder of %s: %w", runDir, err)
	}
	return &Store{be: &folder{dir: abs, stage: abs}, holds: holdsSecret}, nil
}

// A RunFolder is the folder of a run that may be made only once something
// is kept in it (runlog.Writer, whose on-demand folders are skein serve's
// default). Dir names it; Materialize makes it if need be — checked as the
// run folder's writer checks it: never a symlink or a file in its place —
// and does nothing once it exists.
type RunFolder interface {
	Dir() string
	Materialize() error
}

// NewRunStore is NewStore of the run folder f, which it materializes
// before the first blob is written: a run whose folder is made on demand
// gets it when it first keeps a big value, and a run that keeps none gets
// none.
func NewRunStore(f RunFolder, holdsSecret func(string) bool) (*Store, error) {
	s, err := NewStore(f.Dir(), holdsSecret)
	if err != nil {
		return nil, err
	}
	s.be.(*folder).prepare = f.Materialize
	return s, nil
}

// New returns a store that writes through be (a shared folder, the
// Postgres table), refusing the secret values holdsSecret reports.
func New(be Backend, holdsSecret func(string) bool) *Store {
	return &Store{be: be, holds: holdsSecret}
}

// Backend is where the store keeps its blobs.
func (s *Store) Backend() Backend { return s.be }

// RemoveStale removes the temporary files a process that died while it
// wrote blobs left in a run folder. Call it before a resumed run writes
// any: no other process writes a run's blobs.
func (s *Store) RemoveStale() error {
	if f, ok := s.be.(*folder); ok && !f.shared {
		return f.removeStale()
	}
	return nil
}

// Dir is the blobs folder of a run folder's store, "" for another backend.
func (s *Store) Dir() string {
	if f, ok := s.be.(*folder); ok && !f.shared {
		return f.dir
	}
	return ""
}

// ctx is the context of the backend's calls: kinds write blobs through
// node.Blobs, which has none.
func ctx() context.Context { return context.TODO() }

// secret reports whether text holds a secret value.
func (s *Store) secret(text string) bool {
	return s.holds != nil && s.holds(text)
}

// blob is the Blob of digest sum in this store.
func (s *Store) blob(typ, sum string, size int64) *Blob {
	return &Blob{sum: sum, size: size, typ: typ, path: s.be.Path(sum), kind: s.be.Kind(), src: s.be}
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

// write makes the blob sum unless it exists: a staged file filled by
// fill, synced, then kept.
func (s *Store) write(typ, sum string, size int64, fill func(*os.File) error) (*Blob, error) {
	b := s.blob(typ, sum, size)
	if ok, err := s.be.Has(ctx(), b); err != nil {
		return nil, s.fail(err)
	} else if ok {
		return b, nil
	}
	f, err := s.be.Stage()
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
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, s.fail(err)
	}
	if err := s.be.Keep(ctx(), f.Name(), b); err != nil {
		_ = os.Remove(f.Name())
		return nil, err
	}
	return b, nil
}

func (s *Store) fail(err error) error {
	if f, ok := s.be.(*folder); ok {
		return f.fail(err)
	}
	return fmt.Errorf("writing a big value: %w", err)
}

// Adopt returns b as a blob of this store: b itself when it is one; else
// it is linked (or copied) into this store, so that it lives as long as
// this run does (a pinned output of another run).
func (s *Store) Adopt(b *Blob) (any, error) {
	if b.path != "" && b.path == s.be.Path(b.sum) || b.path == "" && b.kind != "" && b.kind == s.be.Kind() {
		return b, nil
	}
	nb := s.blob(b.typ, b.sum, b.size)
	if ok, err := s.be.Has(ctx(), nb); err != nil {
		return nil, s.fail(err)
	} else if ok {
		return nb, nil
	}
	if l, ok := s.be.(linker); ok && b.path != "" {
		if err := l.Link(ctx(), b.path, nb); err == nil {
			return nb, nil
		}
		// Another file system, or links not allowed: copy.
	}
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
	f, err := s.be.Stage()
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
// value (the file is then removed). The blob is durable when Commit
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
	b := w.s.blob(w.typ, hex.EncodeToString(w.h.Sum(nil)), w.n)
	if ok, err := w.s.be.Has(ctx(), b); err != nil || ok {
		_ = os.Remove(tmp)
		if err != nil {
			return nil, w.s.fail(err)
		}
		return b, nil
	}
	if err := w.s.be.Keep(ctx(), tmp, b); err != nil {
		_ = os.Remove(tmp)
		return nil, err
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
