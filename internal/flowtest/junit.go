package flowtest

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// JUnit XML, the shape CI systems read: one testsuite per test file, one
// testcase per case, a failure element holding its mismatches.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func seconds(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

// WriteJUnit writes the report as JUnit XML.
func (rep *Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{Tests: len(rep.Cases), Failures: rep.Failed, Time: seconds(rep.DurationMS)}
	index := map[string]int{}
	for _, c := range rep.Cases {
		i, ok := index[c.File]
		if !ok {
			i = len(out.Suites)
			index[c.File] = i
			out.Suites = append(out.Suites, junitSuite{Name: c.File})
		}
		s := &out.Suites[i]
		jc := junitCase{Name: c.Name, Classname: c.Workflow, Time: seconds(c.DurationMS)}
		if !c.Passed {
			s.Failures++
			lines := c.Problems()
			jc.Failure = &junitFailure{Message: lines[0], Text: strings.Join(lines, "\n")}
		}
		s.Tests++
		s.Cases = append(s.Cases, jc)
	}
	for i := range out.Suites {
		var ms int64
		for _, c := range rep.Cases {
			if c.File == out.Suites[i].Name {
				ms += c.DurationMS
			}
		}
		out.Suites[i].Time = seconds(ms)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// Problems are the lines that say why a case failed: its error, then
// each mismatch.
func (c CaseResult) Problems() []string {
	var out []string
	if c.Error != "" {
		out = append(out, c.Error)
	}
	for _, m := range c.Mismatches {
		out = append(out, m.String())
	}
	if len(out) == 0 && !c.Passed {
		out = append(out, "the case failed")
	}
	return out
}
