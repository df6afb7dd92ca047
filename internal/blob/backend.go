package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
)

// ErrNotFound: no blob with that digest is kept where it was looked for.
var ErrNotFound = errors.New("blob not found")

// Backend keeps the bytes of blobs, named by their SHA-256; a Store
// writes through one. There are three: the run folder's (NewStore, the
// default of local runs), a folder every worker mounts (NewShared) and a
// table of the Postgres database (package store/postgres). A Backend is
// safe for concurrent use, by goroutines and by processes that share its
// place: two that keep the same digest at once keep one blob.
type Backend interface {
	// Kind names the backend in references: "" for a run folder, whose
	// references hold the blob's path; otherwise references hold the kind
	// and the digest, and any process that mounted a backend of that kind
	// (Mount) reads them.
	Kind() string
	// Stage returns a new temporary file to write a blob into before
	// Keep.
	Stage() (*os.File, error)
	// Keep makes the staged file, closed and synced, the blob b — durably:
	// when Keep returns, b can be read after a crash — and removes it.
	Keep(ctx context.Context, staged string, b *Blob) error
	// Has reports whether b is kept whole.
	Has(ctx context.Context, b *Blob) (bool, error)
	// Open reads the blob of digest sum; its error wraps ErrNotFound when
	// none is kept.
	Open(ctx context.Context, sum string) (io.ReadCloser, error)
	// Path is the file references name for blob sum, or "" when they name
	// the kind.
	Path(sum string) string
}

// linker is a Backend that can keep a blob from a file by linking it
// rather than copying (the run folder: a pinned output of another run).
type linker interface {
	Link(ctx context.Context, file string, b *Blob) error
}

// mounted holds the backends this process reads references of by kind.
var mounted = struct {
	sync.RWMutex
	by map[string][]*Backend
}{by: map[string][]*Backend{}}

// Mount makes the references of be's kind readable in this process — the
// steps a worker on another machine wrote, read by this one — until
// unmount is called. A reference names a digest, not a place: a blob is
// read from the first mounted backend of its kind that holds it. A
// backend of kind "" (a run folder) needs no mount.
func Mount(be Backend) (unmount func()) {
	if be.Kind() == "" {
		return func() {}
	}
	p := &be
	mounted.Lock()
	mounted.by[be.Kind()] = append(mounted.by[be.Kind()], p)
	mounted.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mounted.Lock()
			defer mounted.Unlock()
			k := be.Kind()
			mounted.by[k] = slices.DeleteFunc(mounted.by[k], func(q *Backend) bool { return q == p })
		})
	}
}

// openMounted reads blob sum from a mounted backend of kind.
func openMounted(ctx context.Context, kind, sum string) (io.ReadCloser, error) {
	mounted.RLock()
	bes := slices.Clone(mounted.by[kind])
	mounted.RUnlock()
	if len(bes) == 0 {
		return nil, fmt.Errorf("blob %s is kept in a %s blob store, and this process has none open", short(sum), kind)
	}
	var firstErr error
	for _, p := range bes {
		rc, err := (*p).Open(ctx, sum)
		if err == nil {
			return rc, nil
		}
		// A backend unmounted while it was asked (its store closing)
		// is as if it had not been there: its error does not count.
		if !errors.Is(err, ErrNotFound) && firstErr == nil && isMounted(kind, p) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return nil, fmt.Errorf("blob %s in the %s blob store: %w", short(sum), kind, ErrNotFound)
}

// isMounted reports whether the backend p is still mounted.
func isMounted(kind string, p *Backend) bool {
	mounted.RLock()
	defer mounted.RUnlock()
	return slices.Contains(mounted.by[kind], p)
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}
