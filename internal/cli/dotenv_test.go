package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecretsFileDotenv: --secrets-file reads dotenv as people write it:
// comments after values, export, both quotes, escapes, values on several
// lines, ${NAME} of a name above. A line that is not NAME=value stops the
// run before it starts, naming the file.
func TestSecretsFileDotenv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := filepath.Join(dir, "read.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: read
secrets: [QUOTED, SINGLE, PLAIN, ESCAPED, LINES, DOLLAR, JOINED]
nodes:
  - id: check
    type: shell
    command:
      - sh
      - -c
      - |
        test "$1" = "quoted-value" || { echo "QUOTED=[$1]"; exit 1; }
        test "$2" = "single value" || { echo "SINGLE=[$2]"; exit 1; }
        test "$3" = "plain-value" || { echo "PLAIN=[$3]"; exit 1; }
        test "$4" = "$(printf 'line one\nline two')" || { echo "ESCAPED=[$4]"; exit 1; }
        test "$5" = "$(printf 'first line\nsecond line')" || { echo "LINES=[$5]"; exit 1; }
        test "$6" = 'pa$$word-$HOME' || { echo "DOLLAR=[$6]"; exit 1; }
        test "$7" = "plain-value/joined" || { echo "JOINED=[$7]"; exit 1; }
        echo all-read
      - x
      - "{{ secrets.QUOTED }}"
      - "{{ secrets.SINGLE }}"
      - "{{ secrets.PLAIN }}"
      - "{{ secrets.ESCAPED }}"
      - "{{ secrets.LINES }}"
      - "{{ secrets.DOLLAR }}"
      - "{{ secrets.JOINED }}"
`), 0o644))
	env := filepath.Join(dir, ".env")
	require.NoError(t, os.WriteFile(env, []byte(`# secrets of the read workflow
QUOTED="quoted-value" # a comment after a quoted value
export SINGLE='single value'   # and after a single-quoted one
PLAIN=plain-value # and after a plain one

ESCAPED="line one\nline two"
LINES="first line
second line"
DOLLAR='pa$$word-$HOME'
JOINED=${PLAIN}/joined
`), 0o600))

	r := skein(t, "run", "-o", "json", "--dir", filepath.Join(dir, ".skein"), "--secrets-file", env, flow)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	o := decode(t, r)
	require.Equal(t, "completed", string(o.Status))
	require.Equal(t, "all-read\n", o.Steps[0].Output.Stdout)

	bad := filepath.Join(dir, "bad.env")
	require.NoError(t, os.WriteFile(bad, []byte("QUOTED=\"unterminated\n"), 0o600))
	r = skein(t, "run", "-o", "json", "--dir", filepath.Join(dir, ".skein"), "--secrets-file", bad, flow)
	require.Equal(t, 2, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout+r.stderr, "the secrets file: "+bad+": unterminated quoted value")

	// A line that is not NAME=value is told by its line.
	require.NoError(t, os.WriteFile(bad, []byte("A=1\n# a comment\nBAD LINE\nC=3\n"), 0o600))
	r = skein(t, "run", "--dir", filepath.Join(dir, ".skein"), "--secrets-file", bad, flow)
	require.Equal(t, 2, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "the secrets file: "+bad+":3: unexpected character")
	require.Contains(t, r.stderr, "(each line is NAME=value)")
}
