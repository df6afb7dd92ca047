package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/runner"
)

func migrateCmd(e *env) *cobra.Command {
	var dir, output string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the database to this skein's schema",
		Long: `Apply the schema migrations the database lacks and say what was done:
the folder's SQLite database (--dir), a SQLite file, or a Postgres database
(--db postgres://user@host:5432/db; add search_path=NAME to keep Skein in a
schema of its own). Every command does this when it opens a database; this
command lets you do it ahead of time, e.g. before starting servers.

A database a newer skein migrated further is refused and left as it was.
On Postgres it also creates River's job tables and the queue's run history
(the tables skein worker and queued runs use).

Passwords in URLs are never printed.`,
		Example: `  skein migrate
  skein migrate --db postgres://skein@db.internal:5432/skein?sslmode=require`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := runner.Migrate(cmd.Context(), runner.Config{Dir: dir, DB: e.db})
			if err != nil {
				return failure(err)
			}
			if output == "json" {
				doc := migrateDoc{DB: res.DB, Version: res.Version, From: res.Version, Applied: []migrationDoc{}, River: res.River}
				for _, m := range res.Applied {
					doc.Applied = append(doc.Applied, migrationDoc{m.Version, m.Name})
				}
				if len(res.Applied) > 0 {
					doc.From = res.Applied[0].Version - 1
				}
				if doc.River == nil {
					doc.River = []int{}
				}
				writeJSON(e.stdout, doc)
				return nil
			}
			for _, m := range res.Applied {
				fmt.Fprintf(e.stdout, "applied %04d %s\n", m.Version, m.Name)
			}
			if len(res.River) > 0 {
				fmt.Fprintf(e.stdout, "applied River queue migrations %v\n", res.River)
			}
			if len(res.Applied) == 0 {
				fmt.Fprintf(e.stdout, "%s is up to date: schema version %d\n", res.DB, res.Version)
				return nil
			}
			from := res.Applied[0].Version - 1
			fmt.Fprintf(e.stdout, "%s migrated from schema version %d to %d\n", res.DB, from, res.Version)
			return nil
		},
	}
	addDirFlag(cmd.Flags(), &dir)
	addOutputFlag(cmd, &output)
	return cmd
}

// migrateDoc is what skein migrate -o json prints.
type migrateDoc struct {
	DB      string         `json:"db" jsonschema:"the database: a SQLite file, or a Postgres URL without its password"`
	From    int            `json:"from" jsonschema:"the schema version it had"`
	Version int            `json:"version" jsonschema:"the schema version it has now"`
	Applied []migrationDoc `json:"applied" jsonschema:"the migrations applied, in order; empty when it was up to date"`
	River   []int          `json:"river" jsonschema:"the migrations of River's queue tables applied (Postgres)"`
}

// migrationDoc is one migration applied.
type migrationDoc struct {
	Version int    `json:"version"`
	Name    string `json:"name"`
}
