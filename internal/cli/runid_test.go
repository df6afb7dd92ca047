package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// TestRunIDPrefixes: every command that takes a run id takes a unique
// prefix of one; an ambiguous prefix is a usage error that lists the runs
// it matches.
func TestRunIDPrefixes(t *testing.T) {
	t.Parallel()
	sk := filepath.Join(t.TempDir(), ".skein")
	r := skein(t, "run", "--dir", sk, "-o", "json", "testdata/fail.yaml")
	require.Equal(t, 1, r.code, r.stderr)
	id := decode(t, r).ID
	prefix := id[:5]

	// Two runs whose ids share a prefix no generated id has (ids are hex).
	st, err := sqlite.Open(filepath.Join(sk, "skein.db"))
	require.NoError(t, err)
	for i, twin := range []string{"zz0000000001", "zz0000000002"} {
		require.NoError(t, st.CreateRun(context.Background(), &store.Run{ID: twin, Workflow: "twins", Status: "completed",
			StartedAt: time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC)}))
	}
	require.NoError(t, st.Close())

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stdout, or in stderr when code is 2
	}{
		{"runs show", []string{"runs", "show", prefix}, 0, "run " + id + " · fail · failed"},
		{"runs show json", []string{"runs", "show", "-o", "json", prefix}, 0, `"execution_id": "` + id + `"`},
		{"runs events", []string{"runs", "events", prefix}, 0, `"type":"execution_started"`},
		{"runs verdict", []string{"runs", "verdict", prefix}, 0, "run " + id + " has no verdict"},
		{"runs list --parent", []string{"runs", "list", "--parent", prefix}, 0, "ID"},
		{"check", []string{"check", prefix}, 0, "the workflow has no checks"},
		{"resume", []string{"resume", "-o", "json", prefix}, 1, `"execution_id": "` + id + `"`},
		{"resume --plan", []string{"resume", "--plan", prefix}, 0, "resume plan for run " + id},
		{"rerun", []string{"rerun", "-o", "json", prefix}, 1, `"workflow": "fail"`},
		{"cancel", []string{"cancel", prefix}, 2, "run " + id + " is failed"},
		{"ambiguous", []string{"runs", "show", "zz"}, 2, "run id \"zz\" is ambiguous: 2 runs begin with it; type more of the id:\n  zz0000000002  twins  completed"},
		{"signal", []string{"signal", prefix, "step"}, 2, "run " + id},
		{"ambiguous cancel", []string{"cancel", "zz"}, 2, "zz0000000001  twins  completed"},
		{"ambiguous signal", []string{"signal", "zz", "approve"}, 2, "zz0000000001  twins  completed"},
		{"ambiguous parent", []string{"runs", "list", "--parent", "zz"}, 2, `run id "zz" is ambiguous`},
		{"unknown parent", []string{"runs", "list", "--parent", "nope"}, 2, `no run "nope"`},
		{"unknown", []string{"runs", "verdict", "nope"}, 2, `no run "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := skein(t, append(tc.args, "--dir", sk)...)
			require.Equal(t, tc.code, r.code, r.stdout+r.stderr)
			if tc.code == 2 {
				require.Contains(t, r.stderr, tc.want)
				return
			}
			require.Contains(t, r.stdout, tc.want, r.stderr)
		})
	}

	// A unique prefix of the twins names one of them.
	r = skein(t, "runs", "show", "-o", "json", "--dir", sk, "zz0000000002")
	require.Equal(t, 0, r.code, r.stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Equal(t, "zz0000000002", doc["execution_id"])
}
