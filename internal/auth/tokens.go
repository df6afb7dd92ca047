package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/skeinhq/skein/internal/store"
)

// Store keeps tokens; store.Store is one.
type Store interface {
	CreateToken(ctx context.Context, t *store.Token) error
	Token(ctx context.Context, id string) (*store.Token, error)
	Tokens(ctx context.Context) ([]*store.Token, error)
	DeleteToken(ctx context.Context, id string) error
}

// ErrInvalid: a presented token is malformed, unknown, or does not match.
var ErrInvalid = errors.New("the API token is not valid")

// prefix starts every token, so a leaked one is recognised (secret
// scanners, logs).
const prefix = "skn_"

// Tokens makes and checks API tokens.
type Tokens struct{ st Store }

// New returns the tokens kept in st.
func New(st Store) *Tokens { return &Tokens{st: st} }

// Create makes a token of a scope and returns its text, which is shown
// once and kept nowhere, and its stored record.
func (t *Tokens) Create(ctx context.Context, scope Scope, name string) (string, *store.Token, error) {
	if scope <= None || scope > Admin {
		return "", nil, fmt.Errorf("creating a token: %v is not a scope; use read, run, edit or admin", scope)
	}
	id := make([]byte, 6)
	secret := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return "", nil, err
	}
	if _, err := rand.Read(secret); err != nil {
		return "", nil, err
	}
	rec := &store.Token{ID: hex.EncodeToString(id), Name: name, Scope: scope.String()}
	text := prefix + rec.ID + "_" + base64.RawURLEncoding.EncodeToString(secret)
	sum := sha256.Sum256([]byte(text))
	rec.Hash = sum[:]
	if err := t.st.CreateToken(ctx, rec); err != nil {
		return "", nil, err
	}
	return text, rec, nil
}

// Authenticate returns the scope of a token's text: ErrInvalid unless it
// is a token Create made. The stored hash is compared in constant time.
func (t *Tokens) Authenticate(ctx context.Context, text string) (Scope, error) {
	rest, ok := strings.CutPrefix(text, prefix)
	id, _, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || id == "" || len(text) > 200 {
		return None, ErrInvalid
	}
	rec, err := t.st.Token(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return None, ErrInvalid
	}
	if err != nil {
		return None, err
	}
	sum := sha256.Sum256([]byte(text))
	if subtle.ConstantTimeCompare(sum[:], rec.Hash) != 1 {
		return None, ErrInvalid
	}
	sc, err := ParseScope(rec.Scope)
	if err != nil {
		return None, fmt.Errorf("token %s: %w", rec.ID, err)
	}
	return sc, nil
}

// List returns the stored tokens, oldest first: their ids, names, scopes
// and creation times (their texts are kept nowhere).
func (t *Tokens) List(ctx context.Context) ([]*store.Token, error) {
	return t.st.Tokens(ctx)
}

// Revoke deletes a token by its id (the part after skn_ and before the
// next _, which List shows): from then on it authenticates nothing. An
// unknown id fails with store.ErrNotFound.
func (t *Tokens) Revoke(ctx context.Context, id string) error {
	return t.st.DeleteToken(ctx, id)
}
