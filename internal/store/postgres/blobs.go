package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skeinhq/skein/internal/blob"
)

// KindBlobs is the kind of the Postgres blob backend's references.
const KindBlobs = "postgres"

// ChunkSize is the most bytes one row of blob_chunks holds.
const ChunkSize = 1 << 20

// Blobs is the blob backend of a Postgres database (the tables blobs and
// blob_chunks, migration 8): the big values and artifacts of distributed
// runs, which every worker and the server reach through the database.
//
// It reads and writes through a pool of its own (at most blobConns
// connections, made on first use): a blob is read where a transaction of
// the store's pool may be open (a template of the run's outputs, applied in
// the transaction that ends the run), and a transaction must never wait
// for a second connection of the pool it holds one of.
type Blobs struct {
	p *blobPool
}

// Interface guard.
var _ blob.Backend = (*Blobs)(nil)

// blobConns bounds the connections of the blob pool.
const blobConns = 4

// blobPool is the Store's pool for blobs, made on first use.
type blobPool struct {
	base *pgxpool.Pool
	mu   sync.Mutex
	pool *pgxpool.Pool
}

// get returns the pool, making it from the store's configuration.
func (b *blobPool) get(ctx context.Context) (*pgxpool.Pool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pool != nil {
		return b.pool, nil
	}
	cfg := b.base.Config().Copy()
	cfg.MaxConns, cfg.MinConns = blobConns, 0
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening the blob store's connections: %w", err)
	}
	b.pool = p
	return p, nil
}

func (b *blobPool) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pool != nil {
		b.pool.Close()
		b.pool = nil
	}
}

// Blobs returns the store's blob backend.
func (s *Store) Blobs() *Blobs { return &Blobs{p: &s.blobs} }

// Kind is "postgres".
func (*Blobs) Kind() string { return KindBlobs }

// Path is "": references name the kind.
func (*Blobs) Path(string) string { return "" }

// Stage returns a temporary file of this machine: a blob is written
// there, hashed, and inserted when it is whole.
func (*Blobs) Stage() (*os.File, error) {
	f, err := os.CreateTemp("", "skein-blob-*")
	if err != nil {
		return nil, fmt.Errorf("writing a big value: %w", err)
	}
	return f, nil
}

// Has reports whether the blob's row is there (it is inserted last).
func (p *Blobs) Has(ctx context.Context, b *blob.Blob) (bool, error) {
	pool, err := p.p.get(ctx)
	if err != nil {
		return false, err
	}
	var size int64
	err = pool.QueryRow(ctx, `SELECT size FROM blobs WHERE digest = $1`, b.Digest()).Scan(&size)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking for blob %s: %w", b.Digest(), err)
	}
	return size == b.Size(), nil
}

// Keep inserts the staged file's chunks and then the blob's row in one
// transaction, and removes the file. A blob kept already, or being kept
// by another worker at once, is inserted once.
func (p *Blobs) Keep(ctx context.Context, staged string, b *blob.Blob) error {
	defer os.Remove(staged)
	f, err := os.Open(staged)
	if err != nil {
		return fmt.Errorf("writing a big value: %w", err)
	}
	defer f.Close()
	pool, err := p.p.get(ctx)
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("writing a big value: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	buf := make([]byte, ChunkSize)
	seq := 0
	for {
		n, err := io.ReadFull(f, buf)
		if errors.Is(err, io.EOF) && seq > 0 {
			break
		}
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return fmt.Errorf("writing a big value: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO blob_chunks (digest, seq, data) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, b.Digest(), seq, buf[:n]); err != nil {
			return fmt.Errorf("writing a big value: %w", err)
		}
		seq++
		if n < ChunkSize {
			break
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO blobs (digest, size, chunks) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, b.Digest(), b.Size(), seq); err != nil {
		return fmt.Errorf("writing a big value: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("writing a big value: %w", err)
	}
	return nil
}

// Open streams the blob of digest sum a chunk at a time, one query per
// chunk, so a reader holds no connection between reads.
func (p *Blobs) Open(ctx context.Context, sum string) (io.ReadCloser, error) {
	pool, err := p.p.get(ctx)
	if err != nil {
		return nil, err
	}
	var chunks int
	err = pool.QueryRow(ctx, `SELECT chunks FROM blobs WHERE digest = $1`, sum).Scan(&chunks)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("blob %s in the database: %w", sum, blob.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", sum, err)
	}
	return &chunkReader{ctx: ctx, pool: pool, sum: sum, chunks: chunks}, nil
}

// chunkReader reads a blob's chunks in order. It keeps the context of the
// Open that made it: a reader is a call in progress.
type chunkReader struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	sum    string
	chunks int
	next   int
	buf    []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.next >= r.chunks {
			return 0, io.EOF
		}
		var data []byte
		err := r.pool.QueryRow(r.ctx, `SELECT data FROM blob_chunks WHERE digest = $1 AND seq = $2`, r.sum, r.next).Scan(&data)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("reading blob %s: chunk %d is missing", r.sum, r.next)
		}
		if err != nil {
			return 0, fmt.Errorf("reading blob %s: %w", r.sum, err)
		}
		r.buf = data
		r.next++
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *chunkReader) Close() error {
	r.next, r.buf = r.chunks, nil
	return nil
}
