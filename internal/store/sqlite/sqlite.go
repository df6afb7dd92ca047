package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// Options tune Open. The zero value gives the defaults.
type Options struct {
	// BusyTimeout is how long an operation waits for a lock another
	// process holds before it fails with store.ErrLocked (default 5 s).
	BusyTimeout time.Duration
	// ReadConns caps the connections used for reads (default 4).
	ReadConns int

	// migrations replaces the embedded migrations (tests).
	migrations fs.FS
	// retrying is called each time opening meets a lock and tries again
	// (tests).
	retrying func()
	// noImage makes a new database the way an old SQLite file is
	// migrated, not from freshImage (tests).
	noImage bool
}

// Store is a store.Store in one SQLite file.
type Store struct {
	*sqlstore.Core
	st *sqlstore.Statements

	path     string
	timeout  time.Duration
	retrying func()             // Options.retrying
	fresh    bool               // a new database may take freshSchema: the migrations are the embedded ones
	imaged   bool               // this open made the database from freshImage
	schema   store.SchemaReport // what Open did to the schema
	w        *sql.DB            // one connection: every write, in order
	r        *sql.DB            // read-only connections
	ck       *sql.DB            // one connection: checkpoints (checkpoints)
	// inFileTemp, when set (tests), is called by tempInFile once the
	// writer keeps its temporary data in files, with what it is for.
	inFileTemp func(op string)
	// fileTemp counts the tempInFile calls not given back yet.
	fileTempMu sync.Mutex
	fileTemp   int
	// ckStop stops the checkpoints; ckDone is closed when they stopped.
	ckStop, ckDone chan struct{}
	// ckMu is held by a background checkpoint, and by Compact, whose
	// truncating checkpoint must not meet one.
	ckMu      sync.Mutex
	closeOnce sync.Once
	closeErr  error

	// Statements of the hot write path, prepared once on w.
	prepOnce     sync.Once
	prepErr      error
	upsertStepSt *sql.Stmt
	runSeqSt     *sql.Stmt // a run's owner and the seq of its last event
	setSeqSt     *sql.Stmt
	insertEvSt   *sql.Stmt
	insertRunSt  *sql.Stmt
	finishRunSt  *sql.Stmt
	insertPlanSt *sql.Stmt
	stepRows     *multiRows // the steps' multi-row INSERTs
	leanRows     *multiRows // those of lean step rows (sqlstore.AppendLeanStepRow)
	upsertLeanSt *sql.Stmt
	eventRows    *multiRows // the events'

	// creates groups concurrent CreateRun calls into one transaction.
	creates creates

	// multiMu guards multi, the statements that insert several rows at
	// once, prepared on the write connection (multiConn, the driver's)
	// the first time a write takes one, and kept: parsing a 64-row
	// INSERT each time would cost more than its rows. They run on the
	// driver's connection, under the write transaction (execMulti).
	multiMu   sync.Mutex
	multi     map[multiKey]driver.Stmt
	multiConn any
	// hot is the write connection while a writeHot transaction holds it:
	// only that transaction's goroutine reads it.
	hot *sql.Conn
	// rowArgs and rowValues hold the arguments of insertRows' statement,
	// kept from one to the next: only a write transaction (one at a time)
	// uses them.
	rowArgs   []any
	rowValues []driver.NamedValue
	// syncFile replaces syncFile (tests).
	syncFile func(path string) error
}

// multiKey is a multi-row INSERT: its kind of rows and its row count.
type multiKey struct {
	rows *multiRows
	n    int
}

// multiRows is what a multi-row INSERT of steps or of events is made of.
type multiRows struct {
	head, tail string
	cols       int
}

// prepared prepares the hot write statements once.
func (s *Store) prepared(ctx context.Context) error {
	s.prepOnce.Do(func() {
		prep := func(q string) *sql.Stmt {
			if s.prepErr != nil {
				return nil
			}
			// Not the caller's ctx: a cancelled first caller must not
			// leave the statements unprepared for good.
			st, err := s.w.PrepareContext(context.WithoutCancel(ctx), q)
			if err != nil {
				s.prepErr = err
			}
			return st
		}
		s.upsertStepSt = prep(rebind(s.st.UpsertStep))
		s.upsertLeanSt = prep(multiInsert(s.leanRows.head, s.leanRows.tail, s.leanRows.cols, 1))
		s.runSeqSt = prep(`SELECT owner_token, event_seq FROM runs WHERE id = ?`)
		s.setSeqSt = prep(rebind(s.st.SetLastSeq))
		s.insertEvSt = prep(rebind(s.st.InsertEvent))
		s.insertRunSt = prep(rebind(s.st.InsertRun))
		s.finishRunSt = prep(rebind(s.st.FinishRun))
		s.insertPlanSt = prep(rebind(s.st.InsertPlan))
	})
	return s.prepErr
}

var _ store.Store = (*Store)(nil)

// Open opens the Skein database at path, creating it when the file does not
// exist or is empty, and migrates it to the schema this binary knows.
func Open(path string) (*Store, error) {
	return OpenWithOptions(path, Options{})
}

// OpenWithOptions is Open with options.
func OpenWithOptions(path string, opts Options) (*Store, error) {
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	fresh := opts.migrations == nil
	if fresh {
		opts.migrations = embeddedMigrations()
	}
	migs, err := store.LoadMigrations(opts.migrations)
	if err != nil {
		return nil, fmt.Errorf("loading the database migrations: %w", err)
	}

	s := &Store{path: path, timeout: opts.BusyTimeout, retrying: opts.retrying, fresh: fresh, multi: map[multiKey]driver.Stmt{}}
	s.Core, s.st = sqlstore.New(db{s}, dialect)
	s.stepRows = &multiRows{s.st.InsertStepHead, s.st.UpsertStepTail, sqlstore.StepArgCount()}
	s.leanRows = &multiRows{sqlstore.LeanStepHead(), s.st.UpsertStepTail, sqlstore.LeanStepArgCount()}
	s.eventRows = &multiRows{s.st.InsertEventHead, "", sqlstore.EventArgCount()}
	if err := orphanLog(path); err != nil {
		return nil, err
	}
	// A new database is freshImage copied into place (image.go), when the
	// image is of the latest schema: opening it then changes nothing.
	placed := false
	if fresh && !opts.noImage && imageVersion() == migs[len(migs)-1].Version {
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			placed, _ = placeImage(path) // failing, the database is made the usual way
		}
	}
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", opts.BusyTimeout.Milliseconds())
	s.w, err = sql.Open("sqlite", uri(path)+"?"+busy+
		"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"+
		"&_pragma=journal_size_limit(67108864)&_pragma=wal_autocheckpoint(0)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)

	if err := s.prepare(migs); err != nil {
		_ = s.w.Close()
		return nil, err
	}
	if s.imaged = placed; placed {
		if err := s.placed(migs); err != nil {
			_ = s.w.Close()
			return nil, err
		}
	}
	// The committer's multi-row upserts write statement journals, which
	// SQLite keeps in a temporary file past 64 KiB: in memory they save a
	// write a page on every commit. Set after the migrations, and taken
	// back for the statements that touch much of the database (tempInFile).
	if _, err := s.w.Exec("PRAGMA temp_store = MEMORY"); err != nil {
		_ = s.w.Close()
		return nil, s.openFailed("setting temp_store", err)
	}

	s.r, err = sql.Open("sqlite", uri(path)+"?"+busy+"&_pragma=query_only(1)")
	if err != nil {
		_ = s.w.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	s.r.SetMaxOpenConns(opts.ReadConns)
	s.r.SetMaxIdleConns(opts.ReadConns)

	s.ck, err = sql.Open("sqlite", uri(path)+"?"+busy)
	if err != nil {
		_ = s.r.Close()
		_ = s.w.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	s.ck.SetMaxOpenConns(1)
	s.ck.SetMaxIdleConns(1)
	s.ckStop, s.ckDone = make(chan struct{}), make(chan struct{})
	go s.checkpoints(checkpointEvery)
	return s, nil
}

// checkpointEvery is how often the write-ahead log is copied into the
// database file.
const checkpointEvery = 100 * time.Millisecond

// checkpoints copies the write-ahead log into the database file every
// interval, from a connection of its own, until Close. SQLite would do it
// itself (every 1,000 pages) inside the commit that crossed the mark, with
// an fsync of the database file: the writer, and every run waiting on its
// group commit, would wait for the disk. A passive checkpoint here waits
// for no one and makes no one wait; the next write after a complete one
// starts the log from its beginning.
func (s *Store) checkpoints(every time.Duration) {
	defer close(s.ckDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ckStop:
			return
		case <-t.C:
		}
		var busy, logFrames, done int
		s.ckMu.Lock()
		_ = s.ck.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &done)
		s.ckMu.Unlock()
	}
}

// prepare checks that the file is a Skein database (or a new one), turns
// WAL on and migrates. It changes nothing before the checks pass.
func (s *Store) prepare(migs []store.MigrationFile) error {
	ctx := context.Background()
	version, err := s.inspect(ctx)
	if err != nil {
		return err
	}
	latest := migs[len(migs)-1].Version
	s.schema = store.SchemaReport{Version: version, Latest: latest}
	if version > latest {
		return s.newerSchema(version, latest)
	}
	mode, err := s.walMode(ctx)
	if err != nil {
		return s.openFailed("turning on WAL mode", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("opening %s: the database stays in %s journal mode, not WAL (is it on a network file system?)", s.path, mode)
	}
	return s.migrate(ctx, migs, version)
}

// walMode turns WAL on and returns the journal mode the database is in.
// In a new database the change is a write made inside a read: when another
// process holds the write lock — it is making the same change, or
// migrating — SQLite fails the upgrade at once rather than call the busy
// handler, since waiting inside a read could deadlock. So walMode tries
// again, from a fresh statement, until the busy timeout: `skein run`s
// started together in a new folder all open it.
func (s *Store) walMode(ctx context.Context) (string, error) {
	deadline := time.Now().Add(s.timeout)
	delay := time.Millisecond
	for {
		var mode string
		err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		code, ok := sqliteCode(err)
		if !ok || code != sqlite3.SQLITE_BUSY || !time.Now().Before(deadline) {
			return mode, err
		}
		if s.retrying != nil {
			s.retrying()
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// inspect returns the schema version of the database: 0 for a new one. A
// database with tables but no schema_migrations is not Skein's.
func (s *Store) inspect(ctx context.Context) (int, error) {
	rows, err := s.w.QueryContext(ctx,
		`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		return 0, s.openFailed("reading the schema", err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			_ = rows.Close()
			return 0, s.openFailed("reading the schema", err)
		}
		tables = append(tables, name)
	}
	if err := rows.Close(); err != nil {
		return 0, s.openFailed("reading the schema", err)
	}
	if err := rows.Err(); err != nil {
		return 0, s.openFailed("reading the schema", err)
	}
	if len(tables) == 0 {
		return 0, nil
	}
	if !slices.Contains(tables, "schema_migrations") {
		return 0, &sqlstore.Condition{
			Msg: fmt.Sprintf("%s is a SQLite database but not a Skein database (it has tables %s and no schema_migrations); "+
				"move it away or point --dir elsewhere — nothing was changed", s.path, strings.Join(tables, ", ")),
			Errs: []error{store.ErrCorrupt},
		}
	}
	var v int
	if err := s.w.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, s.openFailed("reading the schema version", err)
	}
	return v, nil
}

func (s *Store) newerSchema(have, know int) error {
	return sqlstore.NewerSchema(s.path, "--dir", have, know)
}

// openFailed describes an error met while opening: a file that is not a
// database gets the message that tells the user what to do.
func (s *Store) openFailed(doing string, err error) error {
	if code, ok := sqliteCode(err); ok && (code == sqlite3.SQLITE_NOTADB || code == sqlite3.SQLITE_CORRUPT) {
		return &sqlstore.Condition{
			Msg: fmt.Sprintf("%s is not a Skein database (%v); move it away or point --dir elsewhere — nothing was changed",
				s.path, err),
			Errs: []error{store.ErrCorrupt, err},
		}
	}
	if code, ok := sqliteCode(err); ok && code == sqlite3.SQLITE_CANTOPEN {
		if why := cantOpen(s.path); why != "" {
			return &sqlstore.Condition{Msg: fmt.Sprintf("opening %s: %s", s.path, why), Errs: []error{err}}
		}
	}
	return s.failed(fmt.Sprintf("opening %s: %s", s.path, doing), err)
}

// cantOpen says why SQLite could not open or make the file at path, when
// the path itself tells (a folder, a folder that is missing), or "".
func cantOpen(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Sprintf("it is a folder, not a database file; give the path of a file (%s, say)", filepath.Join(path, "skein.db"))
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("the folder %s does not exist; make it (mkdir -p %s) or give a path in a folder that does", dir, dir)
	case err == nil && !fi.IsDir():
		return fmt.Sprintf("%s is a file, not a folder; give a path in a folder", dir)
	}
	return ""
}

// failed wraps the error of an operation, telling a lock held too long and a
// damaged file from other errors.
func (s *Store) failed(op string, err error) error {
	if err == nil {
		return nil
	}
	code, ok := sqliteCode(err)
	switch {
	case ok && (code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED):
		return &sqlstore.Condition{
			Msg: fmt.Sprintf("%s: %s is locked by another process (waited %s); stop the other skein or try again later",
				op, s.path, s.timeout),
			Errs: []error{store.ErrLocked, err},
		}
	case ok && (code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB):
		return &sqlstore.Condition{
			Msg:  fmt.Sprintf("%s: %s is damaged (%v)", op, s.path, err),
			Errs: []error{store.ErrCorrupt, err},
		}
	case ok && code == sqlite3.SQLITE_FULL:
		// Nothing of the statement was written: the run goes on from its
		// last commit once there is room (skein resume).
		return &sqlstore.Condition{
			Msg:  fmt.Sprintf("%s: the disk that holds %s is full (%v); free some disk space and run again", op, s.path, err),
			Errs: []error{syscall.ENOSPC, err},
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// sqliteCode returns the primary result code of a SQLite error.
func sqliteCode(err error) (int, bool) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return 0, false
	}
	return se.Code() & 0xff, true
}

// uri returns path as a SQLite file: URI, so that names holding ? or # work.
func uri(path string) string {
	p := filepath.ToSlash(path)
	if filepath.VolumeName(path) != "" {
		p = "/" + p // file:/C:/dir/skein.db
	}
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}

// writeHot is write for the statements prepared by prepared, which must be
// prepared before the transaction takes the one write connection, and for
// the multi-row INSERTs of execMulti, which run on the transaction's
// connection.
func (s *Store) writeHot(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	if err := s.prepared(ctx); err != nil {
		return s.failed(op, err)
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return s.failed(op, err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.failed(op, err)
	}
	s.hot = conn
	err = fn(tx)
	s.hot = nil
	if err != nil {
		_ = tx.Rollback()
		return s.failed(op, err)
	}
	return s.failed(op, tx.Commit())
}

// write runs fn in a write transaction.
func (s *Store) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.failed(op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return s.failed(op, err)
	}
	return s.failed(op, tx.Commit())
}

// Schema says what Open did to the database's schema.
func (s *Store) Schema() store.SchemaReport { return s.schema }

// Compact rebuilds the file without the pages freed by deleted rows and
// truncates the write-ahead log, so the file shrinks.
func (s *Store) Compact(ctx context.Context) error {
	s.ckMu.Lock() // a background checkpoint would make TRUNCATE give up
	defer s.ckMu.Unlock()
	// VACUUM copies the database into a temporary one.
	back, err := s.tempInFile(ctx, "compact")
	if err != nil {
		return s.failed("compacting the database", err)
	}
	_, err = s.w.ExecContext(ctx, "VACUUM")
	if berr := back(); err == nil {
		err = berr
	}
	if err != nil {
		return s.failed("compacting the database", err)
	}
	var busy, logPages, moved int
	err = s.w.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &moved)
	return s.failed("compacting the database", err)
}

// DeleteRuns deletes runs as sqlstore does, with the writer's temporary
// data in files: deleting many runs is one statement over much of the
// database, whose statement journal could be its size.
func (s *Store) DeleteRuns(ctx context.Context, before time.Time, dryRun bool) ([]*store.Run, error) {
	if dryRun {
		return s.Core.DeleteRuns(ctx, before, dryRun)
	}
	back, err := s.tempInFile(ctx, "delete runs")
	if err != nil {
		return nil, s.failed("deleting runs", err)
	}
	runs, err := s.Core.DeleteRuns(ctx, before, dryRun)
	if berr := back(); err == nil && berr != nil {
		return nil, s.failed("deleting runs", berr)
	}
	return runs, err
}

// tempInFile makes the writer keep its temporary data (statement
// journals, VACUUM's copy) in files, which SQLite bounds in memory, rather
// than in memory without bound, until back is called. The writer is one
// connection, so the setting holds for what runs in between: a commit of
// the committer meanwhile pays a file's writes, nothing more.
// Overlapping calls (two prunes) share the setting: the last back sets
// MEMORY again.
func (s *Store) tempInFile(ctx context.Context, op string) (back func() error, err error) {
	s.fileTempMu.Lock()
	defer s.fileTempMu.Unlock()
	if _, err := s.w.ExecContext(ctx, "PRAGMA temp_store = FILE"); err != nil {
		return nil, err
	}
	s.fileTemp++
	if s.inFileTemp != nil {
		s.inFileTemp(op)
	}
	return func() error {
		s.fileTempMu.Lock()
		defer s.fileTempMu.Unlock()
		if s.fileTemp--; s.fileTemp > 0 {
			return nil
		}
		_, err := s.w.ExecContext(context.WithoutCancel(ctx), "PRAGMA temp_store = MEMORY")
		return err
	}, nil
}

// Close closes the database.
func (s *Store) Close() error {
	for _, st := range []*sql.Stmt{s.upsertStepSt, s.runSeqSt, s.setSeqSt, s.insertEvSt, s.insertRunSt, s.finishRunSt, s.insertPlanSt} {
		if st != nil {
			_ = st.Close()
		}
	}
	// The multi-row INSERTs are closed on their connection, once a write
	// that holds it is done (execMulti refuses to prepare more).
	if c, err := s.w.Conn(context.Background()); err == nil {
		_ = c.Raw(func(dc any) error {
			s.multiMu.Lock()
			defer s.multiMu.Unlock()
			if dc == s.multiConn {
				for _, st := range s.multi {
					_ = st.Close()
				}
			}
			s.multi = nil
			return nil
		})
		_ = c.Close()
	}
	s.closeOnce.Do(func() {
		close(s.ckStop)
		<-s.ckDone
		err := errors.Join(s.ck.Close(), s.r.Close())
		s.keepWAL(context.Background())
		s.closeErr = errors.Join(err, s.w.Close())
	})
	return s.closeErr
}
