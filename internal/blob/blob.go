package blob

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/skeinhq/skein/expr"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"slices"
	"unicode/utf8"

	"github.com/skeinhq/skein/node"
)

// Sizes that decide what is kept in memory.
const (
	// InlineLimit is the size above which a value goes to a blob: a text
	// of more bytes, or a list or object whose JSON would be longer.
	InlineLimit = 64 << 10
	// MinSize is the smallest value that goes to a blob once a run's
	// Budget is spent; smaller ones are not worth a file.
	MinSize = 1 << 10
	// DefaultBudget is how many bytes of output values a run keeps in
	// memory unless its workflow's limits say otherwise.
	DefaultBudget = 256 << 20
	// refSize is what a Blob counts for in memory.
	refSize = 128
)

// Key is the one key of a blob's reference object in JSON.
const Key = "$skein.blob"

// Types of blob.
const (
	Text = "text" // the value is a string; the file holds its bytes
	JSON = "json" // the value is a list or an object; the file holds its JSON
)

// Blob is a value kept in a blob store: a file of a run folder, named by
// its path, or a blob of a shared store (a shared folder, Postgres), named
// by the store's kind and its digest. Its methods are safe for concurrent
// use; a Blob never changes.
type Blob struct {
	sum  string // hex SHA-256 of the content
	size int64
	typ  string
	path string  // the file, for a run folder's blob (and references of old)
	kind string  // the kind of a shared store, when path is ""
	src  Backend // the store that wrote it, nil for a decoded reference
}

// Interface guard: expressions load a Blob when they read it.
var _ interface{ Load() (any, error) } = (*Blob)(nil)

// Digest is the hex SHA-256 of the blob's file.
func (b *Blob) Digest() string { return b.sum }

// Size is the length of the blob's file in bytes.
func (b *Blob) Size() int64 { return b.size }

// Type is Text or JSON.
func (b *Blob) Type() string { return b.typ }

// Path is the blob's file, or "" for a blob of a shared store.
func (b *Blob) Path() string { return b.path }

// Store is the kind of the shared store that keeps the blob ("shared",
// "postgres"), or "" for a run folder's.
func (b *Blob) Store() string { return b.kind }

// String describes the blob; it never reads it.
func (b *Blob) String() string {
	if b.path == "" {
		return fmt.Sprintf("<%s of %d bytes in the %s blob store>", b.typ, b.size, b.kind)
	}
	return fmt.Sprintf("<%s of %d bytes in %s>", b.typ, b.size, b.path)
}

// where names the blob in errors.
func (b *Blob) where() string {
	if b.path == "" {
		return fmt.Sprintf("blob %s of the %s store", short(b.sum), b.kind)
	}
	return b.path
}

// Open reads the blob: its file, or a shared store's blob through the
// store that wrote it or a mounted one (Mount). The error of a blob that
// is not kept wraps ErrNotFound.
func (b *Blob) Open() (io.ReadCloser, error) {
	if b.path != "" {
		f, err := os.Open(b.path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading a big value: %w: %w", ErrNotFound, err)
		}
		if err != nil {
			return nil, fmt.Errorf("reading a big value: %w", err)
		}
		return f, nil
	}
	var rc io.ReadCloser
	var err error
	if b.src != nil {
		rc, err = b.src.Open(ctx(), b.sum)
	} else {
		rc, err = openMounted(ctx(), b.kind, b.sum)
	}
	if err != nil {
		return nil, fmt.Errorf("reading a big value: %w", err)
	}
	return rc, nil
}

// Load reads the value back: the string of a Text blob, the list or
// object of a JSON blob (whole numbers as int, others as float64, as the
// store decodes them). A shared store's blob is checked against its
// digest.
func (b *Blob) Load() (any, error) {
	rc, err := b.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	h := sha256.New()
	var buf bytes.Buffer
	buf.Grow(int(min(b.size, 1<<30)) + 1)
	var r io.Reader = rc
	if b.path == "" {
		r = io.TeeReader(rc, h)
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("reading a big value: %w", err)
	}
	data := buf.Bytes()
	if int64(len(data)) != b.size {
		return nil, fmt.Errorf("reading a big value: %s has %d bytes, %d were written", b.where(), len(data), b.size)
	}
	if b.path == "" && hex.EncodeToString(h.Sum(nil)) != b.sum {
		return nil, fmt.Errorf("reading a big value: %s does not hold what was written (its digest differs)", b.where())
	}
	if b.typ == Text {
		return string(data), nil
	}
	v, ok := node.ParseJSON(data)
	if !ok {
		return nil, fmt.Errorf("reading a big value: %s is not JSON", b.where())
	}
	return refs(v), nil
}

type refJSON struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Type   string `json:"type"`
	Path   string `json:"path,omitempty"`
	Store  string `json:"store,omitempty"`
}

// MarshalJSON encodes the blob as its reference object.
func (b *Blob) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(map[string]refJSON{Key: {SHA256: b.sum, Size: b.size, Type: b.typ, Path: b.path, Store: b.kind}})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// FromRef returns the Blob a decoded reference object stands for; ok is
// false when m is not one.
func FromRef(m map[string]any) (*Blob, bool) {
	if len(m) != 1 {
		return nil, false
	}
	r, ok := m[Key].(map[string]any)
	if !ok {
		return nil, false
	}
	sum, _ := r["sha256"].(string)
	typ, _ := r["type"].(string)
	path, _ := r["path"].(string)
	kind, _ := r["store"].(string)
	size, okSize := intOf(r["size"])
	if !validSum(sum) || !okSize || size < 0 || (path == "") == (kind == "") || (typ != Text && typ != JSON) {
		return nil, false
	}
	return &Blob{sum: sum, size: size, typ: typ, path: path, kind: kind}, true
}

func validSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func intOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= 1<<53 {
			return int64(x), true
		}
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	}
	return 0, false
}

// refs replaces the reference objects in a decoded value by Blobs, in
// place.
func refs(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if b, ok := FromRef(x); ok {
			return b
		}
		for k, e := range x {
			x[k] = refs(e)
		}
	case []any:
		for i, e := range x {
			x[i] = refs(e)
		}
	}
	return v
}

// Resolve returns v with every Blob in it loaded. Maps and lists that hold
// one are copied; v is never modified, and is returned as it is when it
// holds none. A *Blob is an expr.Lazy, so this is expr.ResolveLazy.
func Resolve(v any) (any, error) { return expr.ResolveLazy(v) }

// maxDepth bounds the nesting Spill follows.
const maxDepth = 1000

// Preview returns v with each Blob in it replaced by a value to show: a
// text by its first n bytes (with " … (N bytes)" after them when it is
// longer), a list or object by itself when its JSON is n bytes or less.
// Blobs that cannot be read, and longer lists and objects, stay
// references. v is not modified.
func Preview(v any, n int) any {
	return Replace(v, func(b *Blob) (any, bool) { return b.preview(n) })
}

// preview is the value to show for b (Preview), and whether there is one.
func (b *Blob) preview(n int) (any, bool) {
	if b.typ == JSON {
		if b.size > int64(n) {
			return b, false
		}
		l, err := b.Load()
		if err != nil {
			return b, false
		}
		return l, true
	}
	f, err := b.Open()
	if err != nil {
		return b, false
	}
	defer f.Close()
	head := make([]byte, min(int64(n), b.size))
	if _, err := io.ReadFull(f, head); err != nil {
		return b, false
	}
	if b.size <= int64(n) {
		return string(head), true
	}
	for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				head = head[:i]
			}
			break
		}
	}
	return fmt.Sprintf("%s … (%d bytes)", head, b.size), true
}

// Replace returns v with each Blob in it for which f says so (its second
// result) replaced by f's first result. Maps and lists that hold one are
// copied; v is never modified, and is returned as it is when nothing is
// replaced.
func Replace(v any, f func(*Blob) (any, bool)) any {
	if out, changed := replace(v, f, 0); changed {
		return out
	}
	return v
}

func replace(v any, f func(*Blob) (any, bool), depth int) (any, bool) {
	if depth > maxDepth {
		return v, false
	}
	switch x := v.(type) {
	case *Blob:
		return f(x)
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			if r, changed := replace(e, f, depth+1); changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = r
			}
		}
		return out, out != nil
	case []any:
		var out []any
		for i, e := range x {
			if r, changed := replace(e, f, depth+1); changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = r
			}
		}
		return out, out != nil
	}
	return v, false
}

// RefAt is the blob's reference object, as MarshalJSON encodes it, with
// path in place of its own: how an answer names a run folder's blob by a
// path of the answer's own (relative to a server's data folder).
func (b *Blob) RefAt(path string) map[string]any {
	r := map[string]any{"sha256": b.sum, "size": b.size, "type": b.typ}
	if path != "" {
		r["path"] = path
	} else {
		r["store"] = b.kind
	}
	return map[string]any{Key: r}
}
