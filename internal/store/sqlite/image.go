package sqlite

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// freshImage is a new database as the embedded migrations build it (the
// database file after freshSchema, in WAL mode, checkpointed, every
// migration recorded with applied_at 0), gzipped, with "schema version N"
// as the gzip header's comment. Written by TestFreshSchemaIsTheMigrated
// with -update.
//
// A new database is this file copied into place: one write and one fsync
// instead of SQLite creating the file, turning WAL on and running the
// schema, which cost ~3.5 ms and five fsyncs of a cold `skein run`'s
// ~23 ms.
//
//go:embed fresh.db.gz
var freshImage []byte

// imageVersion is the schema version of freshImage; 0 when it cannot be
// read.
func imageVersion() int {
	zr, err := gzip.NewReader(bytes.NewReader(freshImage))
	if err != nil {
		return 0
	}
	var v int
	if _, err := fmt.Sscanf(zr.Comment, "schema version %d", &v); err != nil {
		return 0
	}
	return v
}

// placeImage writes freshImage at path, unless a file is there already,
// and reports whether it did. The file appears whole or not at all: it is
// written and synced under a temporary name, then linked to path (which
// fails if another process placed its own meanwhile: that one is used).
// An error leaves nothing at path; the caller then makes the database the
// usual way.
func placeImage(path string) (bool, error) {
	zr, err := gzip.NewReader(bytes.NewReader(freshImage))
	if err != nil {
		return false, err
	}
	dir := filepath.Dir(path)
	// Made as SQLite makes a database (0644 less the umask), under a name
	// of its own.
	tmp, err := os.OpenFile(fmt.Sprintf("%s.new-%d-%x", path, os.Getpid(), rand.Uint64()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return false, err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, err = io.Copy(tmp, zr)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, err
	}
	// The new name is durable once its folder is.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return true, nil
}
