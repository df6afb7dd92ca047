package secrets_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/secrets"
	"github.com/skeinhq/skein/workflow"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// Each secret is read from SKEIN_SECRET_<NAME>, then <NAME>, then the
// secrets file; what none sets is named with where to set it.
func TestResolve(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), ".env")
	require.NoError(t, os.WriteFile(file, []byte("C=from-file # a comment\nA=not-this\n"), 0o600))
	w := &workflow.Workflow{Secrets: []string{"A", "B", "C"}}
	tests := []struct {
		name    string
		env     map[string]string
		file    string
		want    map[string]string
		wantErr string
	}{
		{name: "prefixed wins", env: map[string]string{"SKEIN_SECRET_A": "pa", "A": "a", "B": "b"}, file: file,
			want: map[string]string{"A": "pa", "B": "b", "C": "from-file"}},
		{name: "one missing", env: map[string]string{"A": "a", "C": "c"},
			wantErr: "secret B is not set; export SKEIN_SECRET_B (or B), or put it in a --secrets-file"},
		{name: "several missing", env: map[string]string{"A": "a"},
			wantErr: "secrets B, C are not set"},
		{name: "unreadable file", file: filepath.Join(t.TempDir(), "none.env"), wantErr: "the secrets file:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := secrets.Resolve(w, env(tt.env), tt.file)
			if tt.wantErr != "" {
				var unset *secrets.UnsetError
				require.ErrorAs(t, err, &unset)
				require.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// A model config's template reads the secrets; one that reads a secret
// that is not set says so instead of sending "<nil>".
func TestRenderer(t *testing.T) {
	t.Parallel()
	render := secrets.Renderer(map[string]string{"KEY": "k-1"})
	got, err := render("Bearer {{ secrets.KEY }}")
	require.NoError(t, err)
	require.Equal(t, "Bearer k-1", got)
	got, err = render("plain")
	require.NoError(t, err)
	require.Equal(t, "plain", got)
	_, err = render("{{ secrets.OTHER }}")
	require.ErrorContains(t, err, "has no value: the secret it reads is not set")
}

// What a process that starts queued runs knows of their secrets: the
// environment's values as Resolve reads them, then the file's; one set
// nowhere is left out, not an error (the workers have it).
func TestAvailable(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), ".env")
	require.NoError(t, os.WriteFile(file, []byte("C=from-file\nA=not-this\n"), 0o600))
	w := &workflow.Workflow{Secrets: []string{"A", "B", "C"}}

	got, err := secrets.Available(w, env(map[string]string{"SKEIN_SECRET_A": "", "B": "b"}), file)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"A": "", "B": "b", "C": "from-file"}, got)

	got, err = secrets.Available(w, env(map[string]string{"A": "a"}), "")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"A": "a"}, got)

	_, err = secrets.Available(w, env(nil), filepath.Join(t.TempDir(), "none.env"))
	require.Error(t, err)
}
