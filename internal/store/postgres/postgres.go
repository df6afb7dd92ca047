package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// ErrBadURL: the URL given to Open is not a valid Postgres URL.
var ErrBadURL = errors.New("not a valid Postgres URL")

// Options tune Open. The zero value gives the defaults.
type Options struct {
	// MaxConns caps the pool's connections (default: pgxpool's, the
	// larger of 4 and the number of CPUs).
	MaxConns int32
	// ConnectTimeout bounds each connection attempt when the URL sets no
	// connect_timeout (default 10 s).
	ConnectTimeout time.Duration
	// Tracer, when set, sees every statement the pool's connections send
	// (tests count round trips and transactions with it).
	Tracer pgx.QueryTracer

	// migrations replaces the embedded migrations (tests).
	migrations fs.FS
}

// Store is a store.Store in a Postgres database.
type Store struct {
	*sqlstore.Core

	pool   *pgxpool.Pool
	url    string // redacted: for messages
	schema store.SchemaReport
	blobs  blobPool

	// The connections that listen for notifications (listen.go), one
	// per channel, until Close.
	listenMu   sync.Mutex
	listeners  map[string]*listener
	listening  sync.WaitGroup
	listenCtx  context.Context
	listenStop context.CancelFunc
}

var _ store.Store = (*Store)(nil)

// IsURL reports whether db names a Postgres database (a postgres:// or
// postgresql:// URL) rather than a SQLite file.
func IsURL(db string) bool {
	lower := strings.ToLower(db)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// Open connects to the Postgres database of the URL and migrates it to the
// schema this binary knows.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenWithOptions(ctx, dsn, Options{})
}

// OpenWithOptions is Open with options.
func OpenWithOptions(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.migrations == nil {
		opts.migrations = embeddedMigrations()
	}
	migs, err := store.LoadMigrations(opts.migrations)
	if err != nil {
		return nil, fmt.Errorf("loading the database migrations: %w", err)
	}
	cfg, err := parseURL(dsn)
	if err != nil {
		return nil, err
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "skein"
	}
	s := &Store{url: Redact(dsn)}
	s.listenCtx, s.listenStop = context.WithCancel(context.Background())
	s.Core, _ = sqlstore.New(db{s}, dialect)
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	s.blobs.base = s.pool
	if err != nil {
		return nil, s.connectFailed(err)
	}
	if err := s.pool.Ping(ctx); err != nil {
		s.pool.Close()
		return nil, s.connectFailed(err)
	}
	if err := s.migrate(ctx, migs); err != nil {
		s.pool.Close()
		return nil, err
	}
	return s, nil
}

// parseURL parses a postgres:// URL; its errors name the URL without its
// password.
func parseURL(dsn string) (*pgxpool.Config, error) {
	red := Redact(dsn)
	if !IsURL(dsn) {
		return nil, fmt.Errorf("%s: %w: it must start with postgres:// or postgresql://", red, ErrBadURL)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the whole URL, password and all
		}
		return nil, fmt.Errorf("%s is %w: %v", red, ErrBadURL, err)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		msg := err.Error()
		for _, pw := range passwords(u) {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
		return nil, fmt.Errorf("%s is %w: %s", red, ErrBadURL, msg)
	}
	return cfg, nil
}

// passwords returns the secrets a URL holds: its user's password and a
// password= query parameter.
func passwords(u *url.URL) []string {
	var out []string
	if pw, ok := u.User.Password(); ok && pw != "" {
		out = append(out, pw, url.UserPassword("", pw).String()[1:]) // as given and escaped
	}
	for _, pw := range u.Query()["password"] {
		if pw != "" {
			out = append(out, pw, url.QueryEscape(pw))
		}
	}
	return out
}

var queryPassword = regexp.MustCompile(`(^|&)password=[^&]*`)

// Redact returns the URL with its password (in the user part or a
// password= parameter) replaced by xxxxx, fit to print. It works on
// strings that do not parse as URLs too: their user part is taken to end
// at the last @.
func Redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil {
		u.RawQuery = queryPassword.ReplaceAllString(u.RawQuery, "${1}password=xxxxx")
		return u.Redacted()
	}
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return dsn
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if user, _, hasPW := strings.Cut(rest[:at], ":"); hasPW {
			rest = user + ":xxxxx" + rest[at:]
		}
	}
	if base, query, ok := strings.Cut(rest, "?"); ok {
		rest = base + "?" + queryPassword.ReplaceAllString(query, "${1}password=xxxxx")
	}
	return scheme + "://" + rest
}

// Describe names the database of dsn as Redact does and, when the URL
// leaves its host or its database to the defaults (PGHOST, PGDATABASE,
// the user's name), says which database those give: the one a command
// would migrate.
func Describe(dsn string) string {
	name := Redact(dsn)
	u, err := url.Parse(dsn)
	if err != nil || (u.Host != "" && strings.Trim(u.Path, "/") != "") {
		return name
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return name
	}
	return fmt.Sprintf("%s (database %s on %s:%d as %s)", name, cfg.Database, cfg.Host, cfg.Port, cfg.User)
}

// connectFailed describes a failure to reach the server.
func (s *Store) connectFailed(err error) error {
	return fmt.Errorf("connecting to %s: %w (is the Postgres server running and the URL right?)", s.url, err)
}

// Schema says what Open did to the database's schema.
func (s *Store) Schema() store.SchemaReport { return s.schema }

// failed wraps the error of an operation, telling a lock that could not be
// had from other errors.
func (s *Store) failed(op string, err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "55P03" || pe.Code == "40P01") { // lock_not_available, deadlock_detected
		return &sqlstore.Condition{
			Msg:  fmt.Sprintf("%s: a lock on %s was not available (%s); try again", op, s.url, pe.Message),
			Errs: []error{store.ErrLocked, err},
		}
	}
	if errors.As(err, &pe) && pe.Code == codeDiskFull {
		return &sqlstore.Condition{
			Msg:  fmt.Sprintf("%s: the Postgres server at %s is out of disk space (%s); free disk space on the server and try again", op, s.url, pe.Message),
			Errs: []error{syscall.ENOSPC, err},
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// codeDiskFull is the SQLSTATE of a write the server had no disk space
// for (disk_full).
const codeDiskFull = "53100"

// pgCode returns the SQLSTATE of a Postgres error.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// codeForeignKey is the SQLSTATE of a row that names a missing row.
const codeForeignKey = "23503"

// write runs fn in a transaction.
func (s *Store) write(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.failed(op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return s.failed(op, err)
	}
	return s.failed(op, tx.Commit(ctx))
}

// pipelined runs a transaction of two round trips: its BEGIN rides in
// front of the batch fn sends first (fn adds its statements to begin and
// reads every result), and its COMMIT behind the batch fn returns, which
// pipelined sends. A read-then-write transaction through s.write takes
// four (BEGIN, read, write, COMMIT); the group commit is one, and takes
// this path. On an error the transaction is rolled back; a connection
// whose state is unknown is not given back to the pool (pgxpool drops a
// connection released inside a transaction).
func (s *Store) pipelined(ctx context.Context, op string, fn func(begin *pgx.Batch, q batchSender) (*pgx.Batch, error)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.failed(op, err)
	}
	defer conn.Release()
	begin := &pgx.Batch{}
	begin.Queue("BEGIN")
	last, err := fn(begin, conn)
	if err == nil {
		last.Queue("COMMIT")
		err = conn.SendBatch(ctx, last).Close()
	}
	if err != nil {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, _ = conn.Exec(rctx, "ROLLBACK")
			cancel()
		}
		return s.failed(op, err)
	}
	return nil
}

// tables are Skein's tables, for Compact.
var tables = []string{"runs", "steps", "step_plans", "events", "checkpoints", "signals", "chat_turns", "workflows", "schedules", "api_tokens"}

// Compact vacuums Skein's tables so the space of deleted rows is reused.
func (s *Store) Compact(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, "VACUUM "+strings.Join(tables, ", ")); err != nil {
		return s.failed("compacting the database", err)
	}
	return nil
}

// Close closes the pool's connections.
func (s *Store) Close() error {
	s.listenStop()
	s.listening.Wait()
	s.blobs.close()
	s.pool.Close()
	return nil
}
