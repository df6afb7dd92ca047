package check_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// screenNode has every kind of judged check.
func screenNode() *workflow.Node {
	return withExpect(nd("login",
		exprChk("fast", "login.ms < 500"),
		chk("text_present", "welcome", map[string]any{"text": "Welcome"}),
		warn(chk("text_absent", "no error", map[string]any{"text": "Error"})),
		chk("template_found", "logo", map[string]any{"template": "logo.png"}),
		chk("window_title", "title", map[string]any{"title": "Dashboard"}),
	), "the user is logged in")
}

func TestJudgeEvidence(t *testing.T) {
	t.Parallel()

	// 25 tool events of visit 2, mixed with other events and with tool
	// events of visit 1, which are not the judged visit's.
	var events, tools []map[string]any
	events = append(events, map[string]any{"type": "tool_call", "visit": 1, "data": map[string]any{"n": -1}})
	for i := range 25 {
		typ := "tool_call"
		if i%2 == 1 {
			typ = "tool_result"
		}
		ev := map[string]any{"type": typ, "node": "login", "visit": 2, "data": map[string]any{"n": i}}
		tools = append(tools, ev)
		events = append(events, map[string]any{"type": "node_started", "visit": 2}, ev)
	}
	images := []string{"/runs/r1/login/artifacts/screen-1.png", "/runs/r1/login/artifacts/screen-2.png"}
	files := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(files, "logo.png"), []byte("\x89PNG logo"), 0o644))

	j := &fakeJudge{replies: []func(check.JudgeRequest) ([]check.JudgeVerdict, error){
		reply(
			check.JudgeVerdict{CheckName: "welcome", Verdict: "pass", Reasoning: "the banner reads Welcome, Ada"},
			check.JudgeVerdict{CheckName: "no error", Verdict: "fail", Reasoning: "a toast says Error 500"},
			check.JudgeVerdict{CheckName: "logo", Verdict: "PASS ", Reasoning: "top left"},
			check.JudgeVerdict{CheckName: "title", Verdict: "fail", Reasoning: "the title is Login"},
			check.JudgeVerdict{CheckName: "expect", Verdict: "pass", Reasoning: "the dashboard shows"},
		),
	}}
	var askedEvents, askedImages []string
	in := check.Input{
		Workflow: &workflow.Workflow{Nodes: []*workflow.Node{screenNode()}},
		Result:   result(ok("login", 1, 1, map[string]any{"ms": 900}), ok("login", 2, 2, map[string]any{"ms": 120, "page": "/home"})),
		Events: func(node string) []map[string]any {
			askedEvents = append(askedEvents, node)
			return events
		},
		Images: func(node string) []string {
			askedImages = append(askedImages, node)
			return images
		},
		Files: node.NewFiles(files, files),
		Judge: j,
	}
	v := check.Evaluate(context.Background(), in)

	calls := j.calls()
	require.Len(t, calls, 1, "one judge call per node")
	req := calls[0]
	require.Equal(t, "login", req.Node)
	require.Equal(t, map[string]any{"ms": 120, "page": "/home"}, req.Output, "the last visit's output, without success")
	require.Len(t, req.ToolEvents, 20)
	require.Equal(t, tools[5:], req.ToolEvents, "the last 20 tool events of the judged visit, in order")
	require.Equal(t, images, req.Images)
	require.Equal(t, []string{"login"}, askedEvents)
	require.Equal(t, []string{"login"}, askedImages)
	require.Equal(t, []check.JudgeCheck{
		{Name: "welcome", Type: "text_present", Text: `text "Welcome" is present on screen`},
		{Name: "no error", Type: "text_absent", Text: `text "Error" is absent from the screen`},
		{Name: "logo", Type: "template_found", Text: "the template image attached for this check is found on screen", Template: "logo.png"},
		{Name: "title", Type: "window_title", Text: `the window title is "Dashboard"`},
		{Name: "expect", Type: "expect", Text: "the user is logged in"},
	}, req.Checks, "screen checks and expect, not the deterministic ones")

	require.Equal(t, []string{
		"login:fast=pass", "login:welcome=pass", "login:no error=warn", "login:logo=pass", "login:title=fail", "login:expect=pass",
	}, verdicts(v))
	rs := v.Nodes[0].Checks
	require.Equal(t, "a toast says Error 500", rs[2].Reasoning)
	require.Equal(t, "the title is Login", rs[4].Reasoning)
	require.Equal(t, map[string]any{"tool_events": 20, "images": images}, rs[1].Evidence)
	require.Equal(t, check.StatusFailed, v.Status)
	require.Equal(t, "login", v.Stopped)
}

func TestJudgeReplies(t *testing.T) {
	t.Parallel()

	type script = []func(check.JudgeRequest) ([]check.JudgeVerdict, error)
	failWith := func(err error) func(check.JudgeRequest) ([]check.JudgeVerdict, error) {
		return func(check.JudgeRequest) ([]check.JudgeVerdict, error) { return nil, err }
	}
	v := func(name, verdict string) check.JudgeVerdict {
		return check.JudgeVerdict{CheckName: name, Verdict: verdict, Reasoning: "because " + verdict}
	}
	cases := []struct {
		name     string
		replies  script
		verdicts []string
		asked    [][]string // check names asked in each call
		reason   string     // part of the reasoning of the first error
	}{
		{
			name:     "a good reply",
			replies:  script{reply(v("welcome", "pass"), v("expect", "fail"))},
			verdicts: []string{"home:welcome=pass", "home:expect=fail"},
			asked:    [][]string{{"welcome", "expect"}},
		},
		{
			name:     "malformed twice",
			replies:  script{reply(v("welcome", "maybe"), v("expect", "")), reply(v("welcome", "yes"))},
			verdicts: []string{"home:welcome=error", "home:expect=error"},
			asked:    [][]string{{"welcome", "expect"}, {"welcome", "expect"}},
			reason:   `the judge gave no usable verdict in 2 attempts: its verdict "yes" is not pass or fail`,
		},
		{
			name:     "malformed then good",
			replies:  script{reply(v("welcome", "maybe")), reply(v("welcome", "pass"), v("expect", "pass"))},
			verdicts: []string{"home:welcome=pass", "home:expect=pass"},
			asked:    [][]string{{"welcome", "expect"}, {"welcome", "expect"}},
		},
		{
			name:     "incomplete: only the missing check is asked again",
			replies:  script{reply(v("welcome", "fail")), reply(v("expect", "pass"))},
			verdicts: []string{"home:welcome=fail", "home:expect=pass"},
			asked:    [][]string{{"welcome", "expect"}, {"expect"}},
		},
		{
			name:     "incomplete twice",
			replies:  script{reply(v("welcome", "pass")), reply()},
			verdicts: []string{"home:welcome=pass", "home:expect=error"},
			asked:    [][]string{{"welcome", "expect"}, {"expect"}},
			reason:   "the reply has no verdict for it",
		},
		{
			name:     "empty reply twice",
			replies:  script{reply(), reply()},
			verdicts: []string{"home:welcome=error", "home:expect=error"},
			asked:    [][]string{{"welcome", "expect"}, {"welcome", "expect"}},
		},
		{
			name:     "unknown names",
			replies:  script{reply(v("Welcome", "pass"), v("expect", "pass")), reply(v("wel come", "pass"))},
			verdicts: []string{"home:welcome=error", "home:expect=pass"},
			asked:    [][]string{{"welcome", "expect"}, {"welcome"}},
			reason:   `not asked about: "wel come"`,
		},
		{
			name:     "both pass and fail",
			replies:  script{reply(v("welcome", "pass"), v("welcome", "fail"), v("expect", "pass")), reply(v("welcome", "fail"), v("welcome", "pass"))},
			verdicts: []string{"home:welcome=error", "home:expect=pass"},
			asked:    [][]string{{"welcome", "expect"}, {"welcome"}},
			reason:   "both passes and fails it",
		},
		{
			name:     "the same verdict twice",
			replies:  script{reply(v("welcome", "pass"), v("welcome", "pass"), v("expect", "pass"))},
			verdicts: []string{"home:welcome=pass", "home:expect=pass"},
			asked:    [][]string{{"welcome", "expect"}},
		},
		{
			name:     "judge error twice",
			replies:  script{failWith(errors.New("HTTP 503")), failWith(errors.New("HTTP 529"))},
			verdicts: []string{"home:welcome=error", "home:expect=error"},
			asked:    [][]string{{"welcome", "expect"}, {"welcome", "expect"}},
			reason:   "the judge failed: HTTP 529",
		},
		{
			name:     "judge error then good",
			replies:  script{failWith(errors.New("HTTP 503")), reply(v("welcome", "pass"), v("expect", "pass"))},
			verdicts: []string{"home:welcome=pass", "home:expect=pass"},
			asked:    [][]string{{"welcome", "expect"}, {"welcome", "expect"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := &fakeJudge{replies: tc.replies}
			w := &workflow.Workflow{Nodes: []*workflow.Node{
				withExpect(nd("home", chk("text_present", "welcome", map[string]any{"text": "Welcome"})), "home page"),
			}}
			got := check.Evaluate(context.Background(), check.Input{Workflow: w, Result: result(ok("home", 1, 1, nil)), Judge: j})
			require.Equal(t, tc.verdicts, verdicts(got))

			var asked [][]string
			for _, req := range j.calls() {
				var names []string
				for _, c := range req.Checks {
					names = append(names, c.Name)
				}
				asked = append(asked, names)
			}
			require.Equal(t, tc.asked, asked, "a bad reply is asked again once, for the checks it left unanswered")

			firstErr := true
			for _, r := range got.Nodes[0].Checks {
				require.NotEqual(t, check.Skipped, r.Verdict)
				if r.Verdict == check.Error {
					if firstErr {
						require.Contains(t, r.Reasoning, tc.reason)
						firstErr = false
					}
					require.Equal(t, check.StatusFailed, got.Status, "an error with on_fail fail fails the run")
				} else {
					require.Equal(t, "because "+string(r.Verdict), r.Reasoning)
				}
			}
		})
	}
}

func TestNoJudge(t *testing.T) {
	t.Parallel()
	w := &workflow.Workflow{Nodes: []*workflow.Node{screenNode()}}
	v := check.Evaluate(context.Background(), check.Input{Workflow: w, Result: result(ok("login", 1, 1, map[string]any{"ms": 100}))})

	require.Equal(t, []string{
		"login:fast=pass", "login:welcome=error", "login:no error=error", "login:logo=error", "login:title=error", "login:expect=error",
	}, verdicts(v))
	for _, r := range v.Nodes[0].Checks[1:] {
		require.Equal(t, "no judge model configured", r.Reasoning)
	}
	require.Equal(t, check.StatusFailed, v.Status)
	require.Equal(t, "login", v.Stopped)
}

func TestJudgeCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the user pressed ctrl-c"))
	j := &fakeJudge{}
	w := &workflow.Workflow{Nodes: []*workflow.Node{withExpect(nd("home"), "home page")}}
	v := check.Evaluate(ctx, check.Input{Workflow: w, Result: result(ok("home", 1, 1, nil)), Judge: j})

	require.Empty(t, j.calls(), "a cancelled evaluation does not call the judge")
	r := only(t, v)
	require.Equal(t, check.Error, r.Verdict)
	require.Contains(t, r.Reasoning, "the user pressed ctrl-c")
}

func TestJudgeCheckNamesAreUnique(t *testing.T) {
	t.Parallel()
	j := &fakeJudge{replies: []func(check.JudgeRequest) ([]check.JudgeVerdict, error){
		func(req check.JudgeRequest) ([]check.JudgeVerdict, error) {
			out := answerAll(req, "pass")
			out[1].Verdict = "fail" // the second "screen"
			return out, nil
		},
	}}
	w := &workflow.Workflow{Nodes: []*workflow.Node{withExpect(nd("home",
		chk("text_present", "screen", map[string]any{"text": "A"}),
		chk("text_present", "screen", map[string]any{"text": "B"}),
		chk("text_present", "expect", map[string]any{"text": "C"}),
	), "home page")}}
	v := check.Evaluate(context.Background(), check.Input{Workflow: w, Result: result(ok("home", 1, 1, nil)), Judge: j})

	var names []string
	for _, c := range j.calls()[0].Checks {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"screen", "screen (2)", "expect", "expect (2)"}, names)
	require.Equal(t, []string{"home:screen=pass", "home:screen=fail", "home:expect=pass", "home:expect=pass"}, verdicts(v),
		"results keep the checks' own names")
	require.Equal(t, fmt.Sprintf("%s: pass", "expect (2)"), v.Nodes[0].Checks[3].Reasoning)
}
