package cli_test

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// junitReport is what a CI system reads of skein test --junit.
type junitReport struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Cases []struct {
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestSkeinTestReport: a failing case names each expectation it missed,
// --run picks cases, and a test file naming a node its workflow does not
// have is refused (exit 2) with its file, line and a fix.
func TestSkeinTestReport(t *testing.T) {
	t.Parallel()
	r := skein(t, "test", "testdata/tests/greet.test.yaml")
	require.Equal(t, 1, r.code, r.stderr)
	require.Equal(t, `✓ testdata/tests/greet.test.yaml › greets the name the API gives
✗ testdata/tests/greet.test.yaml › wrong on purpose
    outputs.text: want "Hello, Ada!", got "Hello, Grace!"
    steps.fetch.visits: want 2, got 1

2 cases: 1 passed, 1 failed
`, r.stdout)

	junit := filepath.Join(t.TempDir(), "report.xml")
	r = skein(t, "test", "testdata/tests/greet.test.yaml", "--junit", junit)
	require.Equal(t, 1, r.code)
	data, err := os.ReadFile(junit)
	require.NoError(t, err)
	var rep junitReport
	require.NoError(t, xml.Unmarshal(data, &rep))
	require.Equal(t, 2, rep.Tests)
	require.Equal(t, 1, rep.Failures)
	require.Equal(t, `outputs.text: want "Hello, Ada!", got "Hello, Grace!"`, rep.Suites[0].Cases[1].Failure.Message)

	r = skein(t, "test", "testdata/tests/greet.test.yaml", "--run", "^greets")
	require.Equal(t, 0, r.code, r.stdout)
	require.Contains(t, r.stdout, "1 case: 1 passed, 0 failed\n")

	r = skein(t, "test", "testdata/tests/greet.test.yaml", "--run", "nothing-matches")
	require.Equal(t, 2, r.code)

	r = skein(t, "test", "testdata/tests/bad")
	require.Equal(t, 2, r.code)
	require.Equal(t, `skein: testdata/tests/bad/greet.test.yaml:4: case "names a node that is not there": mocks names node "fetc", which testdata/tests/bad/greet.yaml does not have; did you mean "fetch"?`+"\n", r.stderr)
}
