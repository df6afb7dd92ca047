package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// folder is a Backend of files named by their digest: a run folder's
// blobs/ folder (flat, referenced by path) or a shared folder (one
// sub-folder per first two hex digits, referenced by kind).
type folder struct {
	dir    string // absolute
	shared bool
	// stage is where blobs are written before they are kept: in dir
	// itself (a run folder), or in its tmp/ (a shared folder); the same
	// file system either way, so keeping one is a rename.
	stage string
	// prepare, when set, makes the folder dir is in (a run folder made on
	// demand) before dir is made.
	prepare func() error

	mu    sync.Mutex
	ready bool // dir and stage exist and are folders
}

// KindShared is the kind of a shared folder's references.
const KindShared = "shared"

// NewShared returns the backend of a folder that every worker mounts
// (NFS, a volume), given as a path or a file:// URL. Its blobs are files
// <dir>/<aa>/<digest>, written to <dir>/tmp/ first and renamed into place
// with both synced, so two workers that write one digest at once leave
// one whole file. It creates the folder.
func NewShared(dir string) (Backend, error) {
	if rest, ok := strings.CutPrefix(dir, "file://"); ok {
		u, err := url.Parse("file://" + rest)
		if err != nil || (u.Host != "" && u.Host != "localhost") {
			return nil, fmt.Errorf("the blob folder %q: a file:// URL names a local path (file:///mnt/blobs)", dir)
		}
		dir = u.Path
	} else if u, err := url.Parse(dir); err == nil && len(u.Scheme) > 1 && strings.Contains(dir, "://") {
		// s3://bucket, https://…: not a folder (a path of one letter
		// and a colon is a Windows drive, not a scheme).
		return nil, fmt.Errorf("the blob folder %q: %s:// is not a folder; give a path or a file:// URL of a folder every worker mounts", dir, u.Scheme)
	}
	if dir == "" {
		return nil, errors.New("the blob folder: no path given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("the blob folder %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("the blob folder: %w", err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil { // a mount point may be a link
		return nil, fmt.Errorf("the blob folder: %w", err)
	}
	f := &folder{dir: abs, shared: true, stage: filepath.Join(abs, "tmp")}
	if err := f.mkdir(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *folder) Kind() string {
	if f.shared {
		return KindShared
	}
	return ""
}

func (f *folder) Path(sum string) string {
	if f.shared {
		return ""
	}
	return f.file(sum)
}

// file is where blob sum is kept.
func (f *folder) file(sum string) string {
	if f.shared {
		return filepath.Join(f.dir, sum[:2], sum)
	}
	return filepath.Join(f.dir, sum)
}

func (f *folder) fail(err error) error {
	return fmt.Errorf("writing a big value to %s: %w", f.dir, err)
}

// mkdir creates the folder (and its staging folder), refusing a symlink
// or a file in its place, and syncs the parent of each it made so that
// its name is on disk. The folder it is in is made first by prepare, if
// set.
func (f *folder) mkdir() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ready {
		return nil
	}
	if f.prepare != nil {
		if err := f.prepare(); err != nil {
			return f.fail(err)
		}
	}
	for _, d := range []string{f.dir, f.stage} {
		if err := mkdirSynced(d); err != nil {
			return f.fail(err)
		}
	}
	f.ready = true
	return nil
}

// mkdirSynced makes the folder d unless it exists, syncing its parent
// when it made it; a symlink or a file in its place is an error.
func mkdirSynced(d string) error {
	err := os.Mkdir(d, 0o755)
	created := err == nil
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder (a symlink or a file stands there); remove it and run again", d)
	}
	if created {
		return syncDir(filepath.Dir(d))
	}
	return nil
}

func (f *folder) Stage() (*os.File, error) {
	if err := f.mkdir(); err != nil {
		return nil, err
	}
	tf, err := os.CreateTemp(f.stage, ".tmp-*")
	if err == nil {
		// Readable like the other files of the run folder.
		if err = tf.Chmod(0o644); err != nil {
			_ = tf.Close()
			_ = os.Remove(tf.Name())
		}
	}
	if err != nil {
		return nil, f.fail(err)
	}
	return tf, nil
}

func (f *folder) Keep(_ context.Context, staged string, b *Blob) error {
	path := f.file(b.sum)
	if f.shared {
		if err := mkdirSynced(filepath.Dir(path)); err != nil {
			return f.fail(err)
		}
	}
	// A rename replaces what another writer of the same digest renamed
	// there first with the same bytes: readers see one whole file or the
	// other.
	if err := os.Rename(staged, path); err != nil {
		_ = os.Remove(staged)
		return f.fail(err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return f.fail(err)
	}
	return nil
}

// Link keeps b from file by a hard link (a pinned output of another run
// folder on this file system).
func (f *folder) Link(ctx context.Context, file string, b *Blob) error {
	if err := f.mkdir(); err != nil {
		return err
	}
	tmp := filepath.Join(f.stage, ".tmp-link-"+b.sum)
	_ = os.Remove(tmp)
	if err := os.Link(file, tmp); err != nil {
		return err
	}
	return f.Keep(ctx, tmp, b)
}

func (f *folder) Has(_ context.Context, b *Blob) (bool, error) {
	fi, err := os.Lstat(f.file(b.sum))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == b.size, nil
}

func (f *folder) Open(_ context.Context, sum string) (io.ReadCloser, error) {
	if !validSum(sum) {
		return nil, fmt.Errorf("blob %q: %w", sum, ErrNotFound)
	}
	file, err := os.Open(f.file(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s in %s: %w", short(sum), f.dir, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading a big value: %w", err)
	}
	return file, nil
}

// removeStale removes the staged files a process that died while it
// wrote blobs left.
func (f *folder) removeStale() error {
	entries, err := os.ReadDir(f.stage)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // no folder, nothing stale: a blob written to it says what is wrong with it
	}
	if err != nil {
		return f.fail(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(f.stage, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return f.fail(err)
			}
		}
	}
	return nil
}
