package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/skeinhq/skein/internal/store"
)

// CreateRun stores a new run.
func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
	args, err := stmts.CreateRunArgs(r)
	if err != nil {
		return err
	}
	return s.write(ctx, fmt.Sprintf("creating run %s", r.ID), func(tx pgx.Tx) error {
		return stmts.Created(r, tx.QueryRow(ctx, stmts.InsertRun, args...))
	})
}
