package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store"
)

// testWorkflows checks workflow versions.
func testWorkflows(t *testing.T, setup func(t *testing.T) *bundle) {
	t.Parallel()

	t.Run("VersionsCountFromOne", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		before := time.Now().Add(-time.Second)
		v1, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("name: triage # 1"), "h1")
		require.NoError(t, err)
		v2, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("name: triage # 2"), "h2")
		require.NoError(t, err)

		require.Equal(t, 1, v1.Version)
		require.Equal(t, 2, v2.Version)
		require.Equal(t, "triage", v2.Name)
		require.Equal(t, "h2", v2.Hash)
		require.Equal(t, []byte("name: triage # 2"), v2.Source)
		require.WithinRange(t, v2.CreatedAt, before, time.Now().Add(time.Second), "CreatedAt is the time of saving")

		latest, err := b.s.Workflow(b.ctx, "triage", 0)
		require.NoError(t, err)
		require.Equal(t, v2, latest, "version 0 is the latest")

		first, err := b.s.Workflow(b.ctx, "triage", 1)
		require.NoError(t, err)
		require.Equal(t, v1, first)
	})

	t.Run("SameHashAsLatestStoresNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		v1, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("a"), "h1")
		require.NoError(t, err)
		again, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("a, reformatted"), "h1")
		require.NoError(t, err)
		require.Equal(t, v1, again, "saving the latest hash again returns the latest version")

		_, err = b.s.Workflow(b.ctx, "triage", 2)
		require.ErrorIs(t, err, store.ErrNotFound, "no version 2 was stored")
	})

	t.Run("OlderHashIsANewVersion", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		for _, h := range []string{"h1", "h2"} {
			_, err := b.s.SaveWorkflow(b.ctx, "triage", []byte(h), h)
			require.NoError(t, err)
		}
		back, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("h1"), "h1")
		require.NoError(t, err)
		require.Equal(t, 3, back.Version, "only the latest version's hash is deduplicated")
	})

	t.Run("NamesAreCountedApart", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		_, err := b.s.SaveWorkflow(b.ctx, "a", []byte("a"), "h")
		require.NoError(t, err)
		wb, err := b.s.SaveWorkflow(b.ctx, "b", []byte("b"), "h")
		require.NoError(t, err)
		require.Equal(t, 1, wb.Version)

		got, err := b.s.Workflow(b.ctx, "a", 0)
		require.NoError(t, err)
		require.Equal(t, []byte("a"), got.Source)
	})

	t.Run("EmptySource", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		_, err := b.s.SaveWorkflow(b.ctx, "empty", nil, "h")
		require.NoError(t, err)
		got, err := b.s.Workflow(b.ctx, "empty", 1)
		require.NoError(t, err)
		require.Empty(t, got.Source)
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		_, err := b.s.SaveWorkflow(b.ctx, "triage", []byte("a"), "h1")
		require.NoError(t, err)

		for _, tc := range []struct {
			name    string
			version int
		}{
			{"nope", 0},
			{"nope", 1},
			{"triage", 2},
		} {
			_, err := b.s.Workflow(b.ctx, tc.name, tc.version)
			require.ErrorIs(t, err, store.ErrNotFound, "workflow %s version %d", tc.name, tc.version)
			require.Contains(t, err.Error(), tc.name, "the error names the workflow")
		}
	})
}
