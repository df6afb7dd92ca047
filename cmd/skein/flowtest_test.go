package main_test

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// junitReport is what a CI system reads of skein test --junit.
type junitReport struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestExamplesPassTheirTests: every example has a test file, and the
// binary's `skein test examples/` passes offline (models, MCP servers and
// HTTP calls are mocked) in under 10 s, with a JUnit report that parses.
// Not parallel: it is timed, so it runs alone among this package's tests.
func TestExamplesPassTheirTests(t *testing.T) {
	examples, err := filepath.Glob("../../examples/*.yaml")
	require.NoError(t, err)
	want := map[string]bool{}
	for _, e := range examples {
		if !strings.HasSuffix(e, ".test.yaml") {
			want["examples/"+strings.TrimSuffix(filepath.Base(e), ".yaml")+".test.yaml"] = true
		}
	}
	junit := filepath.Join(t.TempDir(), "report.xml")
	cmd := exec.Command(bin, "test", "examples", "--junit", junit)
	cmd.Dir = "../.."
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("skein test examples/ took %s (its time is BenchmarkExamplesTests')", time.Since(start))
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "✓ examples/hello.test.yaml › greets by name\n")
	require.Contains(t, string(out), " passed, 0 failed\n")

	data, err := os.ReadFile(junit)
	require.NoError(t, err)
	var rep junitReport
	require.NoError(t, xml.Unmarshal(data, &rep), "%s", data)
	require.Zero(t, rep.Failures)
	got := map[string]bool{}
	n := 0
	for _, s := range rep.Suites {
		got[s.Name] = true
		for _, c := range s.Cases {
			require.Nil(t, c.Failure, "%s › %s", s.Name, c.Name)
			n++
		}
	}
	require.Equal(t, want, got, "every example has a test file, and only those run")
	require.Equal(t, rep.Tests, n)
	require.GreaterOrEqual(t, n, len(want))
}

// BenchmarkExamplesTests times `skein test examples/`, the suite a user
// runs first (target: under 10 s; BENCHMARKS.md).
func BenchmarkExamplesTests(b *testing.B) {
	for b.Loop() {
		cmd := exec.Command(bin, "test", "examples")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}
