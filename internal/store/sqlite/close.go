package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// keptWALLimit is the largest write-ahead log Close leaves in place
// rather than copy into the database file.
const keptWALLimit = 1 << 20

// keepWAL readies the writer's connection to be closed, the last of the
// store's, without the checkpoint SQLite makes then: it copies the
// write-ahead log into the database file and syncs both, 1–4 ms of a
// short `skein run` after its result was printed. A log of at most
// keptWALLimit bytes is synced instead — what it holds was committed
// with synchronous=NORMAL, which syncs only at checkpoints — and stays
// for the next process that opens the database, which reads through it
// (and whose background checkpoints copy it in a run that lasts). A
// longer log is checkpointed as SQLite does. It reports whether the log
// stays.
func (s *Store) keepWAL(ctx context.Context) bool {
	wal := s.path + "-wal"
	fi, err := os.Stat(wal)
	if err != nil || fi.Size() > keptWALLimit {
		return false
	}
	c, err := s.w.Conn(ctx)
	if err != nil {
		return false
	}
	defer c.Close()
	sync := s.syncFile
	if sync == nil {
		sync = syncFile
	}
	if sync(wal) != nil {
		return false
	}
	return noCheckpointOnClose(c) == nil
}

// syncFile flushes the file at path to its disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// orphanLog fails when the write-ahead log of the database at path is
// there and the database is not: a database removed without the log that
// Close keeps. SQLite would apply that log to the new database made in
// its place, and corrupt it. The log is looked for first: a log made
// after a database was made, so a database found missing after its log
// was found was removed.
func orphanLog(path string) error {
	if _, err := os.Lstat(path + "-wal"); err != nil {
		return nil
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("opening %s: its write-ahead log %s-wal is there and the database is not (the database was removed without it): put the database back, or remove %s-wal and %s-shm too to start a new one",
		path, path, path, path)
}

// errNoHandle: the driver's connection is not the one noCheckpointOnClose
// knows.
var errNoHandle = errors.New("sqlite: no database handle in the driver's connection")

// noCheckpointOnClose sets SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE on c, which
// modernc.org/sqlite does not expose: it reads the connection's handle
// and its C thread state from the driver's connection, whose fields
// (db uintptr, tls *libc.TLS) TestCloseKeepsASmallLog checks against the
// pinned version; a driver without them fails here and the database is
// closed the usual way.
func noCheckpointOnClose(c *sql.Conn) error {
	return c.Raw(func(dc any) error {
		v := reflect.ValueOf(dc)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return errNoHandle
		}
		db, tls := v.Elem().FieldByName("db"), v.Elem().FieldByName("tls")
		if !db.IsValid() || db.Kind() != reflect.Uintptr || db.Uint() == 0 ||
			!tls.IsValid() || tls.Type() != reflect.TypeFor[*libc.TLS]() || tls.IsNil() {
			return errNoHandle
		}
		t := (*libc.TLS)(unsafe.Pointer(tls.Pointer()))
		const slot = 8 // a libc.VaList argument's size
		va := libc.Xmalloc(t, 2*slot)
		if va == 0 {
			return errNoHandle
		}
		defer libc.Xfree(t, va)
		if rc := sqlite3.Xsqlite3_db_config(t, uintptr(db.Uint()), sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
			libc.VaList(va, int32(1), uintptr(0))); rc != sqlite3.SQLITE_OK {
			return errNoHandle
		}
		return nil
	})
}
