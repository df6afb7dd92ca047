package postgres

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skeinhq/skein/internal/store"
)

// What the queue driver (internal/queue) needs to write a run's records in
// its own transactions, with the jobs it inserts there: the pool, and the
// store's transaction on a transaction of the pool.

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// WithTx returns the store's transaction on tx, a transaction of the
// store's pool its caller began (as River's driver takes the caller's
// transaction): the store's writes through it commit with the caller's.
func (s *Store) WithTx(tx pgx.Tx) store.Tx { return s.TxOn(conn{tx}) }
