package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skeinhq/skein/internal/auth"
)

// AdminTokenFile is the file, in the Skein folder, that holds the admin
// token the server made on its first start.
const AdminTokenFile = "admin.token"

// EnsureAdminToken returns the path of dir's admin token file, making an
// admin token and writing it there (mode 0600) when the file does not hold
// a valid admin token yet: on the first start, or when the database that
// knew it was replaced. made tells whether a token was made.
func EnsureAdminToken(ctx context.Context, tokens *auth.Tokens, dir string) (path string, made bool, err error) {
	path = filepath.Join(dir, AdminTokenFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		sc, aerr := tokens.Authenticate(ctx, strings.TrimSpace(string(data)))
		if aerr == nil && sc == auth.Admin {
			return path, false, nil
		}
		if aerr != nil && !errors.Is(aerr, auth.ErrInvalid) {
			return path, false, aerr
		}
	case !errors.Is(err, os.ErrNotExist):
		return path, false, fmt.Errorf("reading %s: %w", path, err)
	}
	text, _, err := tokens.Create(ctx, auth.Admin, "admin (made by skein serve)")
	if err != nil {
		return path, false, fmt.Errorf("making the admin token: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".admin.token-*")
	if err != nil {
		return path, false, fmt.Errorf("writing the admin token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return path, false, fmt.Errorf("writing the admin token: %w", err)
	}
	if _, err := tmp.WriteString(text + "\n"); err != nil {
		tmp.Close()
		return path, false, fmt.Errorf("writing the admin token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return path, false, fmt.Errorf("writing the admin token: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return path, false, fmt.Errorf("writing the admin token: %w", err)
	}
	return path, true, nil
}
