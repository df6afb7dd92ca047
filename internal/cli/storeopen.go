package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// openSQLite opens <dir>/skein.db, creating the folder.
func openSQLite(dir string) (store.Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create %s: %w; run from a writable folder or set --dir", dir, err)
	}
	return sqlite.Open(filepath.Join(dir, "skein.db"))
}
