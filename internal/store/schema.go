package store

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one version of a store's schema: store/sqlite and
// store/postgres number theirs alike, so a version means the same tables
// in both.
type Migration struct {
	Version int
	Name    string
}

// SchemaReport says what opening a store did to its schema: the version it
// has now, the latest this binary knows, and the migrations this open
// applied, oldest first (none when the schema was up to date).
type SchemaReport struct {
	Version int
	Latest  int
	Applied []Migration
}

// MigrationFile is one numbered schema migration of a store,
// NNNN_name.sql.
type MigrationFile struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads the *.sql files of fsys, the migrations of one
// store (SQLite's and Postgres's are numbered alike); their numbers must
// run 1, 2, 3… without gaps.
func LoadMigrations(fsys fs.FS) ([]MigrationFile, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var migs []MigrationFile
	for _, name := range names {
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: the name must be NNNN_name.sql", name)
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		migs = append(migs, MigrationFile{Version: v, Name: path.Base(rest), SQL: string(src)})
	}
	sort.Slice(migs, func(i, j int) bool { return migs[i].Version < migs[j].Version })
	for i, m := range migs {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: expected version %d (versions run 1, 2, 3… once each)", m.Version, m.Name, i+1)
		}
	}
	if len(migs) == 0 {
		return nil, fmt.Errorf("no migrations")
	}
	return migs, nil
}

// MigrationsDir returns the folder migrations of fsys, where a store
// embeds its migrations.
func MigrationsDir(fsys fs.FS) fs.FS {
	sub, err := fs.Sub(fsys, "migrations")
	if err != nil {
		panic(err) // fs.Sub fails only on an invalid name
	}
	return sub
}
