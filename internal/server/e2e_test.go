package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/skeinbin"
)

// bin is the skein binary the end-to-end tests serve with, built once.
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run()) // a fuzz target serves nothing: no binary to build in every worker
	}
	dir, err := os.MkdirTemp("", "skein-server-bin")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "skein")
	if err := skeinbin.Build(bin); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// served is a `skein serve` process on a free loopback port.
type served struct {
	t     *testing.T
	cmd   *exec.Cmd
	url   string
	token string // the admin token
	dir   string // --dir
	flows string // --workflows
	tmp   string // scratch files of the test

	mu   sync.Mutex
	logs []map[string]any
	raw  bytes.Buffer
	done chan struct{}
}

type serveOpts struct {
	dir   string // reuse the folder of an earlier server
	flows string
	args  []string
	env   []string // more environment variables, NAME=value
}

// serve starts `skein serve` on 127.0.0.1:0 with the test workflows and
// returns once it listens; it is stopped (SIGTERM) when the test ends.
func serve(t *testing.T, o serveOpts) *served {
	t.Helper()
	s := &served{t: t, tmp: t.TempDir(), done: make(chan struct{})}
	s.dir, s.flows = o.dir, o.flows
	if s.dir == "" {
		s.dir = filepath.Join(t.TempDir(), ".skein")
	}
	if s.flows == "" {
		s.flows = copyFlows(t)
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--dir", s.dir, "--workflows", s.flows, "--shutdown-grace", "5s"}, o.args...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = append(os.Environ(), o.env...)
	stderr, err := s.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	addr := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line map[string]any
			s.mu.Lock()
			s.raw.WriteString(sc.Text() + "\n")
			if json.Unmarshal(sc.Bytes(), &line) == nil {
				s.logs = append(s.logs, line)
				if line["msg"] == "listening" {
					addr <- line["addr"].(string)
				}
			}
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { s.stop(syscall.SIGTERM) })
	select {
	case a := <-addr:
		s.url = "http://" + a
	case <-s.done:
		_ = s.cmd.Wait()
		t.Fatalf("skein serve ended before listening:\n%s", s.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("skein serve did not listen within 30 s:\n%s", s.log())
	}
	if data, err := os.ReadFile(filepath.Join(s.dir, "admin.token")); err == nil {
		s.token = strings.TrimSpace(string(data))
	}
	return s
}

// copyFlows copies testdata/flows to a folder of the test's own.
func copyFlows(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir("testdata/flows")
	require.NoError(t, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join("testdata/flows", e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644))
	}
	return dst
}

func (s *served) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw.String()
}

// stop signals the server and waits for it to exit (killing it after 30 s).
func (s *served) stop(sig os.Signal) int {
	if s.cmd.ProcessState != nil {
		return s.cmd.ProcessState.ExitCode()
	}
	_ = s.cmd.Process.Signal(sig)
	exited := make(chan struct{})
	go func() {
		// The log is read to its end first: Wait closes the pipe, and
		// lines the reader had not taken yet (the last ones a server
		// writes as it stops) would be lost.
		<-s.done
		_ = s.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
		s.t.Errorf("skein serve did not stop within 30 s of %v:\n%s", sig, s.log())
	}
	return s.cmd.ProcessState.ExitCode()
}

// answer is an HTTP answer with its body read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(a.body, &m), string(a.body))
	return m
}

// do sends a request with the given token ("" for none).
func (s *served) do(method, path, token string, body any, header ...string) answer {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(s.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	require.NoError(s.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1] // the name the request gives the server
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// admin sends a request with the admin token and checks its status.
func (s *served) admin(method, path string, body any, want int, header ...string) map[string]any {
	s.t.Helper()
	a := s.do(method, path, s.token, body, header...)
	require.Equal(s.t, want, a.status, "%s %s: %s", method, path, a.body)
	return a.json(s.t)
}

// start starts a run of workflow with inputs and returns its id.
func (s *served) start(workflow string, inputs map[string]any) string {
	s.t.Helper()
	doc := s.admin("POST", "/api/workflows/"+workflow+"/runs", map[string]any{"inputs": inputs}, http.StatusAccepted)
	return doc["execution_id"].(string)
}

// until polls GET /api/runs/{id} until cond holds, for at most 30 s.
func (s *served) until(id string, what string, cond func(doc map[string]any) bool) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		doc := s.admin("GET", "/api/runs/"+id, nil, http.StatusOK)
		if cond(doc) {
			return doc
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s: %s did not happen within 30 s; last: %v", id, what, doc)
		}
		time.Sleep(20 * time.Millisecond) // polling a real process: nothing to wait on
	}
}

func (s *served) ended(id string) map[string]any {
	return s.until(id, "end", func(doc map[string]any) bool {
		st := doc["status"].(string)
		return st != "running" && st != "pending" && st != "waiting"
	})
}

// step returns the step of node in a run document.
func step(doc map[string]any, node string) map[string]any {
	for _, s := range doc["steps"].([]any) {
		if m := s.(map[string]any); m["node"] == node {
			return m
		}
	}
	return nil
}

func TestStartGetAndListWithPagination(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})

	var ids []string
	for i := range 5 {
		ids = append(ids, s.start("quick", map[string]any{"who": "Ada", "n": i}))
	}
	for i, id := range ids {
		doc := s.ended(id)
		require.Equal(t, "completed", doc["status"])
		require.Equal(t, fmt.Sprintf("Hello, Ada #%d!", i), doc["outputs"].(map[string]any)["text"])
		require.Len(t, doc["steps"], 2, "GET /api/runs/{id} has the steps")
		require.Equal(t, "success", step(doc, "greet")["status"])
		require.Equal(t, "api", doc["source"], "a run started by POST /api/workflows/{name}/runs")
		// No path of the server's: the file as the workflows folder names
		// it, the folder as the data folder does.
		require.Equal(t, "quick.yaml", doc["file"])
		require.Regexp(t, `^runs/quick/[^/]+_`+id+`$`, doc["dir"])
	}
	gate := s.start("gate", map[string]any{"log": filepath.Join(s.tmp, "log"), "marker": filepath.Join(s.tmp, "marker")})

	// Pages of 2, newest first, until there is no next.
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10, "pagination ends")
		q := "/api/runs?workflow=quick&limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		page := s.admin("GET", q, nil, http.StatusOK)
		for _, r := range page["runs"].([]any) {
			seen = append(seen, r.(map[string]any)["execution_id"].(string))
			require.Equal(t, "api", r.(map[string]any)["source"], "the list carries the source")
		}
		next, _ := page["next"].(string)
		if next == "" {
			break
		}
		require.Len(t, page["runs"], 2, "a page with a next is full")
		cursor = next
	}
	want := make([]string, len(ids))
	for i, id := range ids {
		want[len(ids)-1-i] = id
	}
	require.Equal(t, want, seen, "every run once, newest first")

	running := s.admin("GET", "/api/runs?status=running", nil, http.StatusOK)
	require.Len(t, running["runs"], 1)
	require.Equal(t, gate, running["runs"].([]any)[0].(map[string]any)["execution_id"])
	s.admin("GET", "/api/runs?status=nonsense", nil, http.StatusBadRequest)
	s.admin("GET", "/api/runs?cursor=garbage!", nil, http.StatusBadRequest)

	wfs := s.admin("GET", "/api/workflows", nil, http.StatusOK)
	var names []string
	for _, w := range wfs["workflows"].([]any) {
		names = append(names, w.(map[string]any)["name"].(string))
	}
	require.Equal(t, []string{"approval", "approval_quick", "chatty", "gate", "pause", "quick"}, names)
	require.Len(t, wfs["problems"], 1, "the broken file is reported, not served")
	// The listing names files as the workflows folder does, no path of
	// the server's: not in a problem's file, message or diagnostics.
	listed, err := json.Marshal(wfs)
	require.NoError(t, err)
	require.NotContains(t, string(listed), s.flows)
	require.NotContains(t, string(listed), filepath.Dir(s.flows))
	problem := wfs["problems"].([]any)[0].(map[string]any)
	require.NotContains(t, problem["file"], "/")
	require.Contains(t, problem["message"], problem["file"], "the message names the file as the listing does")
	require.Equal(t, problem["file"], problem["diagnostics"].([]any)[0].(map[string]any)["file"])
	w := s.admin("GET", "/api/workflows/quick", nil, http.StatusOK)
	require.Equal(t, "quick.yaml", w["file"], "a workflow's file is its name in the workflows folder, as the edit routes name it")
	require.Contains(t, w["source"], "name: quick")
	require.Equal(t, "start", w["triggers"].([]any)[0].(map[string]any)["id"])

	require.NoError(t, os.WriteFile(filepath.Join(s.tmp, "marker"), nil, 0o644))
	require.Equal(t, "completed", s.ended(gate)["status"])
}

func TestErrorsAreProblems(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"unknown workflow", "POST", "/api/workflows/nope/runs", nil, 404, "not_found"},
		{"broken workflow", "POST", "/api/workflows/broken/runs", nil, 422, "invalid_workflow"},
		{"wrong input type", "POST", "/api/workflows/quick/runs", map[string]any{"inputs": map[string]any{"n": "many"}}, 400, "invalid_inputs"},
		{"unknown input", "POST", "/api/workflows/quick/runs", map[string]any{"inputs": map[string]any{"whom": "x"}}, 400, "invalid_inputs"},
		{"missing input", "POST", "/api/workflows/gate/runs", map[string]any{}, 400, "invalid_inputs"},
		{"unknown field", "POST", "/api/workflows/quick/runs", map[string]any{"input": map[string]any{}}, 400, "bad_request"},
		{"not json", "POST", "/api/workflows/quick/runs", "{", 400, "bad_request"},
		{"unknown trigger", "POST", "/api/workflows/quick/runs", map[string]any{"trigger": "nope"}, 400, "usage"},
		{"unknown run", "GET", "/api/runs/000000000000", nil, 404, "not_found"},
		{"cancel unknown run", "POST", "/api/runs/000000000000/cancel", nil, 404, "not_found"},
		{"unknown route", "GET", "/api/nothing", nil, 404, "not_found"},
		{"wrong method", "DELETE", "/api/runs", nil, 405, "method_not_allowed"},
		{"body too large", "POST", "/api/workflows/quick/runs", strings.Repeat("#", 1<<20+1), 413, "too_large"},
		{"bad cancel wait", "POST", "/api/runs/000000000000/cancel?wait=forever", nil, 400, "bad_request"},
		{"bad Last-Event-ID", "GET", "/api/runs/000000000000/events?after=x", nil, 400, "bad_request"},
		{"bad limit", "GET", "/api/runs?limit=1.5", nil, 400, "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := s.do(tc.method, tc.path, s.token, tc.body)
			require.Equal(t, tc.status, a.status, string(a.body))
			require.Equal(t, "application/problem+json", a.header.Get("Content-Type"))
			p := a.json(t)
			require.Equal(t, tc.code, p["code"])
			require.Equal(t, float64(tc.status), p["status"])
			require.NotEmpty(t, p["title"])
			require.NotEmpty(t, p["detail"])
			require.Equal(t, "https://skein.dev/problems/"+tc.code, p["type"])
			require.NotContains(t, string(a.body), s.flows, "a problem names the workflows folder's files within it")
			if tc.name == "unknown field" {
				require.Equal(t, `the body has a field "input" that this request does not take; it takes inputs and trigger`, p["detail"])
			}
			if tc.name == "bad Last-Event-ID" {
				require.Equal(t, `after "x" is not an event id (a whole number, 0 or more)`, p["detail"], "names the parameter given")
			}
			if tc.code == "invalid_workflow" {
				require.NotEmpty(t, p["diagnostics"])
				require.Contains(t, p["detail"], "broken.yaml is not served")
			}
		})
	}

	t.Run("validate", func(t *testing.T) {
		ok := s.admin("POST", "/api/workflows/validate", "version: 1\nname: fine\nnodes:\n  - {id: a, type: template, text: hi}\n", http.StatusOK)
		require.Equal(t, true, ok["valid"])
		bad := s.admin("POST", "/api/workflows/validate", "version: 1\nname: bad\nnodes:\n  - {id: a, type: template, text: '{{ b.text }}'}\n", http.StatusOK)
		require.Equal(t, false, bad["valid"])
		d := bad["diagnostics"].([]any)[0].(map[string]any)
		require.Equal(t, "inline.yaml", d["file"])
		require.Equal(t, float64(4), d["line"])
		require.Contains(t, d["message"], `no node "b"`)
	})
}

// TestCancelResumeRerun cancels a run that waits, resumes it once it may
// pass (the step that completed is reused, not run again), then reruns it
// with that step pinned.
func TestCancelResumeRerun(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	log, marker := filepath.Join(s.tmp, "log"), filepath.Join(s.tmp, "marker")
	id := s.start("gate", map[string]any{"log": log, "marker": marker})
	s.until(id, "wait_marker running", func(doc map[string]any) bool {
		st := step(doc, "wait_marker")
		return st != nil && st["status"] == "running"
	})

	doc := s.admin("POST", "/api/runs/"+id+"/cancel?wait=20s", nil, http.StatusOK)
	require.Equal(t, "cancelled", doc["status"])
	require.Equal(t, "cancelled", step(doc, "wait_marker")["status"])
	s.admin("POST", "/api/runs/"+id+"/cancel", nil, http.StatusConflict)

	require.NoError(t, os.WriteFile(marker, nil, 0o644))
	resumed := s.admin("POST", "/api/runs/"+id+"/resume", nil, http.StatusAccepted)
	require.Equal(t, id, resumed["execution_id"])
	doc = s.ended(id)
	require.Equal(t, "completed", doc["status"])
	require.Equal(t, true, step(doc, "count")["cached"], "the completed step is reused")
	require.Equal(t, float64(2), doc["generation"])
	p := s.admin("POST", "/api/runs/"+id+"/resume", nil, http.StatusConflict)
	require.Equal(t, "completed", p["code"])

	rerun := s.admin("POST", "/api/runs/"+id+"/rerun", map[string]any{"pins": []string{"count"}}, http.StatusAccepted)
	newID := rerun["execution_id"].(string)
	require.NotEqual(t, id, newID)
	doc = s.ended(newID)
	require.Equal(t, "completed", doc["status"])
	require.Equal(t, true, step(doc, "count")["pinned"])
	require.Equal(t, "api", doc["source"], "a rerun through the API")
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "ran\n", string(data), "count ran once in all: resumed and rerun reused it")

	p = s.admin("POST", "/api/runs/"+id+"/rerun", map[string]any{"pins": []string{"nope"}}, http.StatusBadRequest)
	require.Equal(t, "usage", p["code"], "an unknown pin is the runner's usage error, as from skein rerun")
}

// TestIdempotencyKey sends the same start with one key at once from many
// clients: one run exists, and every answer names it.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	const n = 20
	var wg sync.WaitGroup
	answers := make([]answer, n)
	body := map[string]any{"inputs": map[string]any{"who": "Key", "n": 7}}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = s.do("POST", "/api/workflows/quick/runs", s.token, body, "Idempotency-Key", "order-42")
		}()
	}
	wg.Wait()
	ids := map[string]int{}
	accepted := 0
	for _, a := range answers {
		require.Contains(t, []int{http.StatusAccepted, http.StatusOK}, a.status, string(a.body))
		if a.status == http.StatusAccepted {
			accepted++
		} else {
			require.Equal(t, "true", a.header.Get("Idempotent-Replayed"))
		}
		ids[a.json(t)["execution_id"].(string)]++
	}
	require.Len(t, ids, 1, "one run for the key")
	require.Equal(t, 1, accepted, "one request started it")
	list := s.admin("GET", "/api/runs?workflow=quick", nil, http.StatusOK)
	require.Len(t, list["runs"], 1)

	p := s.admin("POST", "/api/workflows/quick/runs", map[string]any{"inputs": map[string]any{"who": "Other"}}, http.StatusUnprocessableEntity,
		"Idempotency-Key", "order-42")
	require.Equal(t, "idempotency_key_reused", p["code"])
	other := s.admin("POST", "/api/workflows/quick/runs", body, http.StatusAccepted, "Idempotency-Key", "order-43")
	for id := range ids {
		require.NotEqual(t, id, other["execution_id"], "another key, another run")
	}
}

// sse reads Server-Sent Events.
type sse struct {
	id, event, data string
}

// readEvents connects to a run's event stream (from lastID when set) and
// reads events until stop says so or the stream ends.
func (s *served) readEvents(t *testing.T, runID, lastID string, stop func(sse) bool) []sse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.url+"/api/runs/"+runID+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var out []sse
	var cur sse
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" || cur.data != "" {
				out = append(out, cur)
				if stop(cur) {
					return out // closing the body disconnects
				}
			}
			cur = sse{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	return out
}

// TestEventsReplayAfterReconnect reads part of a running run's events,
// disconnects, and reconnects with Last-Event-ID: together the two
// connections see every event once, in order, as a replay from the start
// does.
func TestEventsReplayAfterReconnect(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	id := s.start("chatty", nil)

	first := s.readEvents(t, id, "", func(e sse) bool { return e.id == "7" })
	require.Len(t, first, 7)
	last := first[len(first)-1].id
	rest := s.readEvents(t, id, last, func(sse) bool { return false })
	require.NotEmpty(t, rest)
	end := rest[len(rest)-1]
	require.Equal(t, "end", end.event, "the stream ends with the run")
	require.Empty(t, end.id, "the end event has no id")
	require.Contains(t, end.data, `"status":"completed"`)

	all := append(first, rest[:len(rest)-1]...)
	for i, e := range all {
		require.Equal(t, strconv.Itoa(i+1), e.id, "ids are 1, 2, 3…: none missed, none twice")
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(e.data), &doc))
		require.Equal(t, float64(i+1), doc["seq"])
		require.Equal(t, e.event, doc["type"])
	}
	require.Equal(t, "execution_started", all[0].event)
	require.Equal(t, "execution_finished", all[len(all)-1].event)
	require.Greater(t, len(all), 100)

	replay := s.readEvents(t, id, "", func(sse) bool { return false })
	require.Equal(t, all, replay[:len(replay)-1], "a replay from the start gives the same events")
	after := s.readEvents(t, id, strconv.Itoa(len(all)), func(sse) bool { return false })
	require.Len(t, after, 1, "nothing after the last event but the end")
}

// TestReloadOnChange adds, breaks and fixes workflow files while serving.
func TestReloadOnChange(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	status := func(name string) int { return s.do("GET", "/api/workflows/"+name, s.token, nil).status }
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not happen within 60 s:\n%s", what, s.log())
			}
			time.Sleep(20 * time.Millisecond) // the watcher's reload is in another process
		}
	}
	require.Equal(t, http.StatusNotFound, status("fresh"))
	src := "version: 1\nname: fresh\nnodes:\n  - {id: a, type: template, text: hi}\n"
	require.NoError(t, os.WriteFile(filepath.Join(s.flows, "fresh.yaml"), []byte(src), 0o644))
	eventually("the new file is served", func() bool { return status("fresh") == http.StatusOK })

	// Broken on disk and reloaded by SIGHUP: reported, not served.
	require.NoError(t, os.WriteFile(filepath.Join(s.flows, "fresh.yaml"), []byte("version: 1\nname: fresh\nnodes: [{id: a, type: nope}]\n"), 0o644))
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGHUP))
	eventually("the broken file is not served", func() bool { return status("fresh") == http.StatusUnprocessableEntity })
}

// TestReloadOnAConfigMapUpdate: a ConfigMap volume shows its files
// through a ..data link to a folder of them, and an update points ..data
// at a new folder (Kubernetes's atomic writer); the server serves the new
// files.
func TestReloadOnAConfigMapUpdate(t *testing.T) {
	t.Parallel()
	flows := t.TempDir()
	version := func(n int) {
		dir := filepath.Join(flows, fmt.Sprintf("..2026_12_07_%d", n))
		require.NoError(t, os.Mkdir(dir, 0o755))
		src := fmt.Sprintf("version: 1\nname: mapped\ndescription: version %d\nnodes:\n  - {id: a, type: template, text: hi}\n", n)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "mapped.yaml"), []byte(src), 0o644))
		require.NoError(t, os.Symlink(filepath.Base(dir), filepath.Join(flows, "..data_tmp")))
		require.NoError(t, os.Rename(filepath.Join(flows, "..data_tmp"), filepath.Join(flows, "..data")))
	}
	version(1)
	require.NoError(t, os.Symlink("..data/mapped.yaml", filepath.Join(flows, "mapped.yaml")))
	s := serve(t, serveOpts{flows: flows})
	require.Equal(t, "version 1", s.admin("GET", "/api/workflows/mapped", nil, http.StatusOK)["description"])
	version(2)
	deadline := time.Now().Add(60 * time.Second)
	for s.admin("GET", "/api/workflows/mapped", nil, http.StatusOK)["description"] != "version 2" {
		if time.Now().After(deadline) {
			t.Fatalf("the update was not served within 60 s:\n%s", s.log())
		}
		time.Sleep(20 * time.Millisecond) // the watcher's reload is in another process
	}
}

func TestShutdownLeavesRunsResumable(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{args: []string{"--shutdown-grace", "200ms"}})
	log, marker := filepath.Join(s.tmp, "log"), filepath.Join(s.tmp, "marker")
	id := s.start("gate", map[string]any{"log": log, "marker": marker})
	s.until(id, "wait_marker running", func(doc map[string]any) bool {
		st := step(doc, "wait_marker")
		return st != nil && st["status"] == "running"
	})
	require.Equal(t, 0, s.stop(syscall.SIGTERM), s.log())
	require.Contains(t, s.log(), `"msg":"run ended","run":"`+id+`","workflow":"gate","status":"interrupted"`)

	// The next server on the folder finds the run interrupted and takes
	// it over, reusing what completed.
	s2 := serve(t, serveOpts{dir: s.dir, flows: s.flows})
	s2.until(id, "taken over", func(doc map[string]any) bool { return doc["generation"] == float64(2) })
	require.NoError(t, os.WriteFile(marker, nil, 0o644))
	doc := s2.ended(id)
	require.Equal(t, "completed", doc["status"])
	require.Equal(t, true, step(doc, "count")["cached"])
}

// TestAuthMatrix: no route but the probes (/healthz, /readyz) answers
// without a valid token (signing in answers, but signs nobody in); a read
// token reads but cannot start, cancel, resume or rerun.
func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	id := s.start("quick", nil)
	s.ended(id)
	read := tokenCreate(t, s.dir, "read")
	run := tokenCreate(t, s.dir, "run")
	edit := tokenCreate(t, s.dir, "edit")

	// The probes answer anyone, with or without a token.
	probes := map[string]string{"/healthz": `{"status":"ok"}`, "/readyz": `{"status":"ready"}`}
	routes := routesOf(t)
	require.NotEmpty(t, routes)
	for _, rt := range routes {
		if strings.HasPrefix(rt.Path, "/hooks/") {
			continue // a hook checks its trigger's own auth, not API tokens: hooks_test.go
		}
		path := strings.NewReplacer("{name}", "quick", "{id}", id).Replace(rt.Path)
		t.Run(rt.Method+" "+rt.Path, func(t *testing.T) {
			for _, tok := range []string{"", "skn_000000000000_nope", "not-a-token"} {
				a := s.do(rt.Method, path, tok, nil)
				if probe, ok := probes[rt.Path]; ok {
					require.Equal(t, http.StatusOK, a.status, "token %q: %s", tok, a.body)
					require.JSONEq(t, probe, string(a.body), "a probe says alive or ready and nothing else")
					continue
				}
				if rt.Scope.String() == "none" {
					// Signing in and out (the web viewer's session) takes
					// no token: session_test.go.
					require.NotEqual(t, http.StatusOK, a.status, "token %q: %s", tok, a.body)
					continue
				}
				require.Equal(t, http.StatusUnauthorized, a.status, "token %q: %s", tok, a.body)
				require.Equal(t, "application/problem+json", a.header.Get("Content-Type"))
				require.Equal(t, "unauthorized", a.json(t)["code"])
				require.Contains(t, a.header.Get("WWW-Authenticate"), "Bearer")
			}
			a := s.do(rt.Method, path, read, nil)
			if sc := rt.Scope.String(); sc == "run" || sc == "edit" || sc == "admin" {
				require.Equal(t, http.StatusForbidden, a.status, string(a.body))
				require.Equal(t, "forbidden", a.json(t)["code"])
				require.Equal(t, rt.Method+" "+path+" needs a token of scope "+sc+"; this token's scope is read", a.json(t)["detail"],
					"the request named as it was sent")
			} else {
				require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, a.status, string(a.body))
			}
			if sc := rt.Scope.String(); sc == "edit" || sc == "admin" {
				a := s.do(rt.Method, path, run, nil)
				require.Equal(t, http.StatusForbidden, a.status, "a run token may not %s %s: %s", rt.Method, rt.Path, a.body)
			}
			if rt.Scope.String() == "edit" {
				a := s.do(rt.Method, path, edit, nil)
				require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, a.status, "an edit token may %s %s: %s", rt.Method, rt.Path, a.body)
			}
		})
	}
	// Unknown routes are denied too, before anything is told about them.
	require.Equal(t, http.StatusUnauthorized, s.do("GET", "/api/secret", "", nil).status)
	require.Equal(t, http.StatusNotFound, s.do("GET", "/api/secret", read, nil).status)

	// A run token starts and cancels.
	s.start("quick", nil)
	a := s.do("POST", "/api/workflows/quick/runs", run, nil)
	require.Equal(t, http.StatusAccepted, a.status, string(a.body))
	a = s.do("POST", "/api/runs/"+a.json(t)["execution_id"].(string)+"/cancel?wait=5s", run, nil)
	require.Contains(t, []int{http.StatusOK, http.StatusConflict}, a.status, "cancelled, or ended before: %s", a.body)

	info, err := os.Stat(filepath.Join(s.dir, "admin.token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the admin token is for its owner only")
}

// tokenCreate makes a token with `skein token create`.
func tokenCreate(t *testing.T, dir, scope string) string {
	t.Helper()
	out, err := exec.Command(bin, "token", "create", "--scope", scope, "--name", "test", "--dir", dir).Output()
	require.NoError(t, err)
	tok := strings.TrimSpace(string(out))
	require.True(t, strings.HasPrefix(tok, "skn_"), tok)
	return tok
}

func TestNoAuth(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:7420", ":7420"} {
		t.Run("refused on "+addr, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, "serve", "--no-auth", "--addr", addr, "--dir", t.TempDir(), "--workflows", "testdata/flows")
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, string(out))
			require.Equal(t, 2, ee.ExitCode(), string(out))
			require.Contains(t, string(out), "--no-auth is only allowed on a loopback address")
		})
	}
	t.Run("loopback serves without a token", func(t *testing.T) {
		t.Parallel()
		s := serve(t, serveOpts{args: []string{"--no-auth"}})
		require.Empty(t, s.token, "no admin token is made")
		a := s.do("GET", "/api/workflows", "", nil)
		require.Equal(t, http.StatusOK, a.status, string(a.body))
		a = s.do("POST", "/api/workflows/quick/runs", "", nil)
		require.Equal(t, http.StatusAccepted, a.status, string(a.body))
		a = s.do("GET", "/api/workflows", "", nil, "Host", "localhost")
		require.Equal(t, http.StatusOK, a.status, "localhost is the machine too: %s", a.body)

		// A page of another site in a browser on the machine may not
		// use it: a cross-site POST (no preflight for text/plain) is
		// refused and writes nothing; nor may a name that resolves to
		// 127.0.0.1 (DNS rebinding) read it.
		pwn := `{"file": "pwn.yaml", "source": "version: 1\nname: pwn\nnodes:\n  - {id: a, type: set, values: {x: 1}}\n"}`
		for _, h := range [][]string{
			{"Content-Type", "text/plain", "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"},
			{"Content-Type", "text/plain", "Origin", "http://evil.example"},
		} {
			a = s.do("POST", "/api/workflows", "", pwn, h...)
			require.Equal(t, http.StatusForbidden, a.status, "%v: %s", h, a.body)
			require.Contains(t, string(a.body), "from another site's page")
		}
		require.NoFileExists(t, filepath.Join(s.flows, "pwn.yaml"))
		a = s.do("GET", "/api/workflows", "", nil, "Host", "evil.example:7420")
		require.Equal(t, http.StatusForbidden, a.status, string(a.body))
		require.Contains(t, string(a.body), "answers only requests to a loopback address")
		a = s.do("GET", "/healthz", "", nil, "Host", "evil.example:7420")
		require.Equal(t, http.StatusOK, a.status, "the probes answer any name")
	})
}

// A served run gets a folder only when it keeps files (--run-folders
// on-demand, the default): the API has all of it from the database. With
// --run-folders always, every run has its folder, as under skein run.
func TestRunFolders(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	id := s.start("quick", map[string]any{"who": "Ada", "n": 1})
	doc := s.ended(id)
	require.Equal(t, "completed", doc["status"])
	require.NoDirExists(t, filepath.Join(s.dir, doc["dir"].(string)), "an on-demand run that keeps no file has no folder")
	evs := s.readEvents(t, id, "", func(e sse) bool { return e.event == "execution_finished" })
	require.NotEmpty(t, evs, "its events are served from the database")

	a := serve(t, serveOpts{args: []string{"--run-folders", "always"}})
	id = a.start("quick", map[string]any{"who": "Ada", "n": 2})
	doc = a.ended(id)
	require.FileExists(t, filepath.Join(a.dir, doc["dir"].(string), "run.json"), "the folder within the data folder")
	require.FileExists(t, filepath.Join(a.dir, doc["dir"].(string), "events.jsonl"))

	out, err := exec.Command(bin, "serve", "--no-auth", "--addr", "127.0.0.1:0", "--workflows", s.flows, "--run-folders", "sometimes").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "--run-folders")
}

// skein token list shows the tokens without their texts; skein token
// revoke makes a running server refuse a token from its next request.
func TestTokenListAndRevoke(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	run := tokenCreate(t, s.dir, "run")
	require.Equal(t, http.StatusOK, s.do("GET", "/api/runs", run, nil).status)

	out, err := exec.Command(bin, "token", "list", "--dir", s.dir, "-o", "json").Output()
	require.NoError(t, err)
	var list struct {
		Tokens []map[string]any `json:"tokens"`
	}
	require.NoError(t, json.Unmarshal(out, &list), string(out))
	require.Len(t, list.Tokens, 2, "the admin token and the run token")
	id := strings.Split(run, "_")[1]
	var found bool
	for _, tk := range list.Tokens {
		require.NotContains(t, fmt.Sprint(tk), run[len(run)-10:], "no token text is kept")
		if tk["id"] == id {
			found = true
			require.Equal(t, "run", tk["scope"])
			require.Equal(t, "test", tk["name"])
		}
	}
	require.True(t, found, "the run token is listed: %s", out)
	text, err := exec.Command(bin, "token", "list", "--dir", s.dir).Output()
	require.NoError(t, err)
	require.Contains(t, string(text), id)

	out, err = exec.Command(bin, "token", "revoke", "--dir", s.dir, run).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, http.StatusUnauthorized, s.do("GET", "/api/runs", run, nil).status, "a revoked token is refused at once")

	out, err = exec.Command(bin, "token", "revoke", "--dir", s.dir, id).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 2, ee.ExitCode(), "a token that is not there, as a run that is not: exit 2")
	require.Contains(t, string(out), "skein token list shows the ids")
}

// TestNullInputsTakeTheirDefaults: an input given as null in a start's
// body is not given (workflow.ResolveInputs): the run gets its default,
// as `skein run` does for a list given -i l=null.
func TestNullInputsTakeTheirDefaults(t *testing.T) {
	t.Parallel()
	s := serve(t, serveOpts{})
	doc := s.ended(s.start("quick", map[string]any{"who": nil, "n": nil}))
	require.Equal(t, "completed", doc["status"], doc["error"])
	require.Equal(t, map[string]any{"who": "world", "n": float64(1)}, doc["inputs"])
}
