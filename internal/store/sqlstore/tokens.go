package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/skeinhq/skein/internal/store"
)

// CreateToken stores an API token.
func (c *Core) CreateToken(ctx context.Context, t *store.Token) error {
	if t == nil || t.ID == "" || len(t.Hash) == 0 || t.Scope == "" {
		return errors.New("creating a token: the token needs an id, a scope and a hash")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = Now()
	}
	return c.db.Write(ctx, "creating token "+t.ID, func(tx Querier) error {
		n, err := tx.Exec(ctx, `INSERT INTO api_tokens (id, name, scope, hash, created_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO NOTHING`, t.ID, t.Name, t.Scope, t.Hash, c.time(t.CreatedAt))
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("token %s: %w", t.ID, store.ErrExists)
		}
		return nil
	})
}

const tokenCols = `id, name, scope, hash, created_at`

func scanToken(row Row) (*store.Token, error) {
	var t store.Token
	var created Time
	if err := row.Scan(&t.ID, &t.Name, &t.Scope, &t.Hash, &created); err != nil {
		return nil, err
	}
	t.CreatedAt = created.T
	return &t, nil
}

// Token returns the API token id.
func (c *Core) Token(ctx context.Context, id string) (*store.Token, error) {
	t, err := scanToken(c.db.Read().QueryRow(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE id = $1`, id))
	if noRows(err) {
		return nil, fmt.Errorf("token %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, c.db.Failed("reading token "+id, err)
	}
	return t, nil
}

// Tokens returns every API token, oldest first.
func (c *Core) Tokens(ctx context.Context) ([]*store.Token, error) {
	rows, err := c.db.Read().Query(ctx, `SELECT `+tokenCols+` FROM api_tokens ORDER BY created_at, id`)
	return collect(c, "listing tokens", rows, err, scanToken)
}

// DeleteToken deletes the API token id.
func (c *Core) DeleteToken(ctx context.Context, id string) error {
	return c.db.Write(ctx, "deleting token "+id, func(tx Querier) error {
		n, err := tx.Exec(ctx, `DELETE FROM api_tokens WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("token %s: %w", id, store.ErrNotFound)
		}
		return nil
	})
}
