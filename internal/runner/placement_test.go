package runner_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/workflow"
)

// TestPlace: the runner decides where a run's nodes run, for every front
// end alike: on the queue with a Postgres database, in this process with
// SQLite, unless the runner or the request asks otherwise, or the run
// keeps a cassette.
func TestPlace(t *testing.T) {
	t.Parallel()
	pg := pgtest.URL(t)
	open := func(t *testing.T, db string, p runner.Placement) *runner.Runner {
		r, err := runner.Open(runner.Config{Dir: filepath.Join(t.TempDir(), ".skein"), DB: db, Placement: p})
		require.NoError(t, err)
		t.Cleanup(func() { _ = r.Close() })
		return r
	}
	w := &workflow.Workflow{Name: "w"}
	recorded := &workflow.Workflow{Name: "w", Record: true}
	tests := []struct {
		name   string
		db     string
		runner runner.Placement
		req    runner.StartRequest
		want   runner.Placement
	}{
		{"sqlite", "", runner.PlaceAuto, runner.StartRequest{Workflow: w}, runner.PlaceLocal},
		{"postgres", pg, runner.PlaceAuto, runner.StartRequest{Workflow: w}, runner.PlaceQueue},
		{"postgres, runner local", pg, runner.PlaceLocal, runner.StartRequest{Workflow: w}, runner.PlaceLocal},
		{"postgres, request local", pg, runner.PlaceAuto, runner.StartRequest{Workflow: w, Placement: runner.PlaceLocal}, runner.PlaceLocal},
		{"postgres, runner local, request queue", pg, runner.PlaceLocal, runner.StartRequest{Workflow: w, Placement: runner.PlaceQueue}, runner.PlaceQueue},
		{"postgres, --record", pg, runner.PlaceAuto, runner.StartRequest{Workflow: w, Options: runner.Options{Record: true}}, runner.PlaceLocal},
		{"postgres, record: true", pg, runner.PlaceAuto, runner.StartRequest{Workflow: recorded}, runner.PlaceLocal},
		{"sqlite, request queue", "", runner.PlaceAuto, runner.StartRequest{Workflow: w, Placement: runner.PlaceQueue}, runner.PlaceQueue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := open(t, tt.db, tt.runner)
			require.Equal(t, tt.want, r.Place(tt.req))
			cfg := runner.Config{DB: tt.db, Placement: tt.runner}
			require.Equal(t, tt.runner == runner.PlaceQueue || tt.runner == runner.PlaceAuto && tt.db != "", cfg.Queued(), "Config.Queued")
		})
	}
}
