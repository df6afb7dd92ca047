package flowtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/confine"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Find returns the test files under paths: a file is taken as it is, a
// folder is walked for files named *.test.yaml. Sorted, without
// duplicates: a file reached by two paths (`.` and `../t1` from inside
// t1) is taken once, by the first.
func Find(paths []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		key, err := filepath.Abs(p)
		if err != nil {
			key = p
		}
		if real, err := filepath.EvalSymlinks(key); err == nil {
			key = real
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if !fi.IsDir() {
			if !strings.HasSuffix(p, Suffix) {
				ext := filepath.Ext(p)
				return nil, fmt.Errorf("%s is not a test file: test files are named *%s (the tests of %s go in %s)", p, Suffix, p, strings.TrimSuffix(p, ext)+Suffix)
			}
			add(filepath.Clean(p))
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), Suffix) {
				add(path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// Options configure a Suite's run.
type Options struct {
	// Parallel bounds the cases running at once (default 8).
	Parallel int
	// Filter, when set, keeps the cases whose "file/name" or name it
	// matches.
	Filter *regexp.Regexp
	// LookupEnv reads the environment (default os.LookupEnv); a test
	// file's secrets: come first.
	LookupEnv func(string) (string, bool)
	// Registry holds the node kinds (default node.Default).
	Registry *node.Registry
	// Update records the cassettes of the cases that name one again: their
	// runs send their requests live, and the cassette file is rewritten
	// (skein test --update).
	Update bool
}

// Report is what a suite's run found, the shape of skein test -o json.
type Report struct {
	Passed     int          `json:"passed" jsonschema:"cases that met every expectation"`
	Failed     int          `json:"failed" jsonschema:"cases that did not"`
	DurationMS int64        `json:"duration_ms"`
	Cases      []CaseResult `json:"cases" jsonschema:"by file, then in the order of the file"`
}

// CaseResult is how one case went.
type CaseResult struct {
	File        string `json:"file" jsonschema:"the test file"`
	Line        int    `json:"line" jsonschema:"where the case begins in it"`
	Workflow    string `json:"workflow"`
	Name        string `json:"name"`
	Passed      bool   `json:"passed"`
	ExecutionID string `json:"execution_id,omitempty" jsonschema:"the run of the case (its folder is removed after the test)"`
	Status      string `json:"status,omitempty" jsonschema:"how the run ended"`
	// Error is set when the run could not start or be recorded.
	Error      string     `json:"error,omitempty" jsonschema:"why the run could not start or be recorded"`
	Mismatches []Mismatch `json:"mismatches" jsonschema:"every expectation not met: status, outputs, steps, verdict, max_cost_usd, max_tokens, each by name"`
	DurationMS int64      `json:"duration_ms"`
}

// Mismatch is one expectation a case did not meet.
type Mismatch struct {
	Path string `json:"path" jsonschema:"what was compared: status, outputs.KEY, steps.NODE.visits, verdict, max_cost_usd…"`
	Want any    `json:"want"`
	Got  any    `json:"got"`
	// Missing is set when the run has nothing at Path (got is null).
	Missing bool `json:"missing,omitempty" jsonschema:"true when the run has nothing at path"`
}

func (m Mismatch) String() string {
	if s, ok := m.Got.(string); ok && m.Path == "cassette" {
		return "cassette: " + s // a request's difference, line by line
	}
	got := show(m.Got)
	if m.Missing {
		got = "nothing"
	}
	return fmt.Sprintf("%s: want %s, got %s", m.Path, show(m.Want), got)
}

// show is v as JSON, as the user wrote it: <, > and & are not escaped.
func show(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Run runs the cases of files, at most opt.Parallel at once. Each file's
// runs go to a temporary folder (its own database and run folders),
// removed when its cases end. Run's error is a failure to make that
// folder; how cases went is in the report.
func Run(ctx context.Context, files []*File, opt Options) *Report {
	if opt.Parallel <= 0 {
		opt.Parallel = 8
	}
	if opt.LookupEnv == nil {
		opt.LookupEnv = os.LookupEnv
	}
	if opt.Registry == nil {
		opt.Registry = node.Default
	}
	start := time.Now()
	type job struct {
		f *File
		c *Case
		i int
	}
	var jobs []job
	for _, f := range files {
		for _, c := range f.Cases {
			if opt.Filter == nil || opt.Filter.MatchString(c.Name) || opt.Filter.MatchString(f.Path+"/"+c.Name) {
				jobs = append(jobs, job{f: f, c: c, i: len(jobs)})
			}
		}
	}
	rep := &Report{Cases: make([]CaseResult, len(jobs))}
	sem := make(chan struct{}, opt.Parallel)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rep.Cases[j.i] = runCase(ctx, opt, j.f, j.c)
		}()
	}
	wg.Wait()
	for _, c := range rep.Cases {
		if c.Passed {
			rep.Passed++
		} else {
			rep.Failed++
		}
	}
	rep.DurationMS = time.Since(start).Milliseconds()
	return rep
}

// park ends a case's run when it waits for a signal: nobody would send one.
var park = &runner.Park{After: time.Minute, SignalsOnly: true}

func runCase(ctx context.Context, opt Options, f *File, c *Case) CaseResult {
	start := time.Now()
	out := CaseResult{File: f.Path, Line: c.Line, Workflow: f.Workflow.Name, Name: c.Name, Mismatches: []Mismatch{}}
	dir, err := os.MkdirTemp("", "skein-test-")
	if err != nil {
		out.Error = "making a folder for the run: " + err.Error()
		return out
	}
	defer os.RemoveAll(dir)
	env := func(name string) (string, bool) {
		if v, ok := f.Secrets[strings.TrimPrefix(name, "SKEIN_SECRET_")]; ok {
			return v, true
		}
		return opt.LookupEnv(name)
	}
	r, err := runner.Open(runner.Config{Dir: dir, LookupEnv: env, Registry: opt.Registry,
		Judge:     func(*workflow.Workflow, func(string) (string, bool), map[string]string) check.Judge { return c.Judge },
		KeptSteps: -1}) // compare counts every visit
	if err != nil {
		out.Error = "opening a store for the run: " + err.Error()
		return out
	}
	defer r.Close()
	o := runner.Options{Park: park, Mock: c.mock}
	switch {
	case c.Cassette != "" && opt.Update:
		o.Record = true
	case c.Cassette != "":
		// Checked again at use: a symlink may have changed since Load.
		if err := c.cassetteInFolder(f.Path); err != nil {
			out.Error = err.Error()
			return out
		}
		tape, err := cassette.Open(c.Cassette)
		if err != nil {
			out.Error = fmt.Sprintf("case %q: %v; record it with skein test --update", c.Name, err)
			return out
		}
		defer tape.Close()
		o.Replay = &runner.ReplaySource{Cassette: tape}
	}
	if o.Record {
		// Refused before the live run, which may cost money, and again
		// when the cassette is written (WriteFile).
		if err := c.cassetteInFolder(f.Path); err != nil {
			out.Error = err.Error()
			return out
		}
	}
	res, err := r.Start(ctx, runner.StartRequest{
		Workflow: f.Workflow, Inputs: c.Inputs, Trigger: c.Trigger, Payload: c.Payload,
		Options: o,
	})
	out.DurationMS = time.Since(start).Milliseconds()
	if err != nil {
		out.Error = "the run did not start: " + err.Error()
		return out
	}
	out.ExecutionID, out.Status = res.Run.ID, string(res.Run.Status)
	if res.Err != nil {
		out.Error = "recording the run: " + res.Err.Error()
	}
	out.Mismatches = compare(c.Expect, res)
	for _, m := range res.CassetteMismatches() {
		out.Mismatches = append(out.Mismatches, Mismatch{Path: "cassette", Want: "the requests of " + filepath.Base(c.Cassette), Got: m.Error()})
	}
	if o.Record && out.Error == "" {
		// Only a run that meets the case is kept: a live service that was
		// down must not replace a good recording.
		if len(out.Mismatches) > 0 {
			out.Error = "the cassette " + c.Cassette + " was left as it was: the live run did not meet the case"
		} else if err := c.saveCassette(f.Path, filepath.Join(res.Run.Dir, cassette.FileName)); err != nil {
			out.Error = "updating the cassette: " + err.Error()
		}
	}
	out.Passed = out.Error == "" && len(out.Mismatches) == 0
	return out
}

// mock is the runner's Options.Mock of the case.
func (c *Case) mock(q runner.MockQuery) (runner.MockAnswer, bool) {
	ms := c.Mocks[q.Node]
	if len(ms) == 0 {
		return runner.MockAnswer{}, false
	}
	m := ms[min(max(q.Visit-1, 0), len(ms)-1)]
	o, d, err := m.answer()
	return runner.MockAnswer{Output: o, Directives: d, Err: err}, true
}

// compare checks a run against what a case expects.
func compare(want Expect, res *runner.Result) []Mismatch {
	ms := []Mismatch{}
	er := res.Engine
	if want.Status == "" {
		want.Status = string(record.RunCompleted) // a run that failed fails the case unless it says so
	}
	if string(er.Status) != want.Status {
		got := any(string(er.Status))
		if er.Error != nil {
			got = string(er.Status) + " (" + er.Error.Message + ")"
		}
		ms = append(ms, Mismatch{Path: "status", Want: want.Status, Got: got})
	}
	for _, k := range sortedKeys(want.Outputs) {
		gv, ok := er.Outputs[k]
		if !ok {
			ms = append(ms, Mismatch{Path: "outputs." + k, Want: want.Outputs[k], Missing: true})
			continue
		}
		ms = subset(ms, "outputs."+k, asJSON(want.Outputs[k]), asJSON(gv))
	}
	for _, id := range sortedKeys(want.Steps) {
		se := want.Steps[id]
		var last *record.Step
		visits := 0
		for _, s := range er.Steps {
			if s.Node != id {
				continue
			}
			last = s
			if s.Status != record.StatusSkipped && s.Status != record.StatusPending {
				visits++
			}
		}
		p := "steps." + id
		if se.Status != "" {
			if last == nil {
				ms = append(ms, Mismatch{Path: p + ".status", Want: se.Status, Missing: true})
			} else if string(last.Status) != se.Status {
				ms = append(ms, Mismatch{Path: p + ".status", Want: se.Status, Got: string(last.Status)})
			}
		}
		if se.Visits != nil && *se.Visits != visits {
			ms = append(ms, Mismatch{Path: p + ".visits", Want: *se.Visits, Got: visits})
		}
		if se.Branch != "" {
			var r any
			if last != nil {
				r = last.Directives["_route"]
			}
			if r == nil {
				ms = append(ms, Mismatch{Path: p + ".branch", Want: se.Branch, Missing: true})
			} else if routeString(r) != se.Branch {
				ms = append(ms, Mismatch{Path: p + ".branch", Want: se.Branch, Got: routeString(r)})
			}
		}
	}
	if want.Verdict != "" {
		got := "none"
		if res.Verdict != nil && res.Verdict.Status != "" {
			got = res.Verdict.Status
		}
		if got != want.Verdict {
			ms = append(ms, Mismatch{Path: "verdict", Want: want.Verdict, Got: got + failedChecks(res.Verdict)})
		}
	}
	if want.MaxCostUSD != nil && er.CostUSD > *want.MaxCostUSD {
		ms = append(ms, Mismatch{Path: "max_cost_usd", Want: fmt.Sprintf("at most %g", *want.MaxCostUSD), Got: er.CostUSD})
	}
	if want.MaxTokens != nil && er.Tokens > *want.MaxTokens {
		ms = append(ms, Mismatch{Path: "max_tokens", Want: fmt.Sprintf("at most %d", *want.MaxTokens), Got: er.Tokens})
	}
	return ms
}

// failedChecks names the checks that did not pass: " (node › check, …)".
func failedChecks(v *check.RunVerdict) string {
	if v == nil {
		return ""
	}
	var names []string
	for _, n := range v.Nodes {
		for _, c := range n.Checks {
			if c.Verdict == check.Fail || c.Verdict == check.Warn || c.Verdict == check.Error {
				names = append(names, n.Node+" › "+c.Check)
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}

func routeString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	return fmt.Sprint(v)
}

// subset compares got with want: a map wants its keys (recursively), any
// other value is compared whole.
func subset(ms []Mismatch, path string, want, got any) []Mismatch {
	wm, ok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if ok && gok {
		for _, k := range sortedKeys(wm) {
			gv, ok := gm[k]
			if !ok {
				ms = append(ms, Mismatch{Path: path + "." + k, Want: wm[k], Missing: true})
				continue
			}
			ms = subset(ms, path+"."+k, wm[k], gv)
		}
		return ms
	}
	if !reflect.DeepEqual(want, got) {
		ms = append(ms, Mismatch{Path: path, Want: want, Got: got})
	}
	return ms
}

// asJSON is v as encoding/json would decode its JSON: numbers are
// float64, so 3 and 3.0 are equal, as they are in JSON.
func asJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// verdictJudge is the judge of a case's run: it answers every judged
// check (expect:, screen checks) with the case's judge: verdict, without a
// model.
type verdictJudge string

func (v verdictJudge) Judge(_ context.Context, req check.JudgeRequest) ([]check.JudgeVerdict, error) {
	out := make([]check.JudgeVerdict, 0, len(req.Checks))
	for _, c := range req.Checks {
		out = append(out, check.JudgeVerdict{CheckName: c.Name, Verdict: string(v),
			Reasoning: "answered by the test case (judge: " + string(v) + "); skein test calls no model"})
	}
	return out, nil
}

// saveCassette writes the cassette a run recorded at src to the file the
// case names, making its folder, beneath the folder of the test file at
// file: a path that leads out of it is refused with the line naming it.
func (c *Case) saveCassette(file, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	err = confine.WriteFile(c.cassetteRef, b, 0o644, filepath.Dir(file))
	if errors.Is(err, confine.ErrEscapes) {
		return c.cassetteError(file, err)
	}
	return err
}
