package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/skeinhq/skein/internal/store"
)

// CreateToken stores an API token.
func (s *Store) CreateToken(ctx context.Context, t *store.Token) error {
	if t == nil || t.ID == "" || len(t.Hash) == 0 || t.Scope == "" {
		return errors.New("creating a token: the token needs an id, a scope and a hash")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now()
	}
	return s.write(ctx, "creating token "+t.ID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO api_tokens (id, name, scope, hash, created_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO NOTHING`, t.ID, t.Name, t.Scope, t.Hash, ts(t.CreatedAt))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("token %s: %w", t.ID, store.ErrExists)
		}
		return nil
	})
}

// Token returns the API token id.
func (s *Store) Token(ctx context.Context, id string) (*store.Token, error) {
	var t store.Token
	err := s.pool.QueryRow(ctx, `SELECT id, name, scope, hash, created_at FROM api_tokens WHERE id = $1`, id).
		Scan(&t.ID, &t.Name, &t.Scope, &t.Hash, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("token %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.failed("reading token "+id, err)
	}
	t.CreatedAt = t.CreatedAt.UTC()
	return &t, nil
}

// Tokens returns every API token, oldest first.
func (s *Store) Tokens(ctx context.Context) ([]*store.Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name, scope, hash, created_at FROM api_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, s.failed("listing tokens", err)
	}
	defer rows.Close()
	var out []*store.Token
	for rows.Next() {
		var t store.Token
		if err := rows.Scan(&t.ID, &t.Name, &t.Scope, &t.Hash, &t.CreatedAt); err != nil {
			return nil, s.failed("listing tokens", err)
		}
		t.CreatedAt = t.CreatedAt.UTC()
		out = append(out, &t)
	}
	return out, s.failed("listing tokens", rows.Err())
}

// DeleteToken deletes the API token id.
func (s *Store) DeleteToken(ctx context.Context, id string) error {
	return s.write(ctx, "deleting token "+id, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM api_tokens WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("token %s: %w", id, store.ErrNotFound)
		}
		return nil
	})
}
