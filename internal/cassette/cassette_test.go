package cassette_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/node"
)

const secret = "sk-live-0123456789abcdef"

var started = time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)

// bundle is a server that streams its answer in pieces and echoes the
// request's body, and a context of node fetch, visit 1, attempt 1.
type bundle struct {
	srv   *httptest.Server
	calls *atomic.Int32
	ctx   context.Context
	mask  func(string) string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Set-Cookie", "session=s-42-cookie")
		for _, piece := range []string{"data: one\n\n", "data: " + string(body) + "\n\n", "data: [DONE]\n\n"} {
			fmt.Fprint(w, piece)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	ctx := node.WithCall(context.Background(), &node.Call{NodeID: "fetch", Visit: 1, Attempt: 1})
	return &bundle{srv: srv, calls: &calls, ctx: ctx, mask: redact.New(map[string]string{"KEY": secret}).Func()}
}

// post sends body through rt and returns the answer's body.
func (b *bundle) post(t *testing.T, rt http.RoundTripper, body string) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(b.ctx, http.MethodPost, b.srv.URL+"/v1/chat?stream=true", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("X-Api-Key", "k-"+secret[:6]) // not a run's secret
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(out), nil
}

// offline is a transport a replay must never use.
type offline struct{ t *testing.T }

func (o offline) RoundTrip(r *http.Request) (*http.Response, error) {
	o.t.Errorf("a replay sent %s %s", r.Method, r.URL)
	return nil, errors.New("offline")
}

// record records one exchange of body and returns the cassette, written
// and read back.
func (b *bundle) record(t *testing.T, runID, body string) (*cassette.Cassette, string) {
	t.Helper()
	tape := cassette.NewRecorder(cassette.Header{Workflow: "w", RunID: runID, StartedAt: started}, b.mask)
	got, err := b.post(t, tape.Transport(nil), body)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), cassette.FileName)
	require.NoError(t, kept(t, tape).Write(path))
	c, err := cassette.Read(path)
	require.NoError(t, err)
	return c, got
}

func TestReplayAnswersWithoutSending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"prompt": "run r-1 with key ` + secret + `"}`
	c, live := b.record(t, "r-1", body)
	require.Contains(t, live, secret, "the live answer echoes the key")
	require.EqualValues(t, 1, b.calls.Load())

	// Another run (its own id in the request) replays it, offline.
	player := opened(t, c).Player("r-2", started.Add(time.Hour), b.mask, false)
	got, err := b.post(t, player.Transport(offline{t}), strings.ReplaceAll(body, "r-1", "r-2"))
	require.NoError(t, err)
	require.Equal(t, strings.ReplaceAll(live, secret, redact.Mask), got, "the streamed answer, whole, its secret masked")
	require.EqualValues(t, 1, b.calls.Load(), "nothing was sent")
	require.Empty(t, player.Mismatches())
}

func TestCassetteNeverHoldsSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.record(t, "r-1", `{"prompt": "`+secret+`", "run": "r-1"}`)
	path := filepath.Join(t.TempDir(), cassette.FileName)
	require.NoError(t, c.Write(path))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret)
	require.NotContains(t, string(raw), "Authorization", "credentials headers are not kept")
	require.NotContains(t, string(raw), "X-Api-Key")
	require.NotContains(t, string(raw), "s-42-cookie", "nor a session the server hands out")
	require.Contains(t, string(raw), redact.Mask)
	require.Contains(t, string(raw), cassette.RunIDPlaceholder)
}

func TestChangedRequestFailsWithItsDiff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.record(t, "r-1", `{"model": "m", "messages": [{"role": "user", "content": "What is 2 + 2?"}]}`)
	player := opened(t, c).Player("r-2", started, b.mask, false)
	_, err := b.post(t, player.Transport(offline{t}), `{"model": "m", "messages": [{"role": "user", "content": "Add 2 and 2."}]}`)
	require.Error(t, err)
	var me *cassette.MismatchError
	require.ErrorAs(t, err, &me)
	require.Equal(t, "fetch", me.Node)
	require.Equal(t, []cassette.Change{{Path: "body.messages[0].content", Recorded: "What is 2 + 2?", Now: "Add 2 and 2."}}, me.Diff)
	require.Contains(t, me.Error(), `node fetch (visit 1, attempt 1) made a http request that differs from the recorded one:
  body.messages[0].content: recorded "What is 2 + 2?", now "Add 2 and 2."`)
	require.Len(t, player.Mismatches(), 1)

	// Another node's request has no recording at all.
	other := node.WithCall(context.Background(), &node.Call{NodeID: "other", Visit: 1, Attempt: 1})
	_, err = cassette.Do(other, player, cassette.KindShell, map[string]any{"argv": []string{"date"}}, func(context.Context) (int, error) {
		t.Error("a replay ran the command")
		return 0, nil
	})
	require.ErrorContains(t, err, "it (visit 1, attempt 1) made a shell request the cassette has no recording of", "the engine names the node before it")
	var me2 *cassette.MismatchError
	require.ErrorAs(t, err, &me2)
	require.Equal(t, "node other (visit 1, attempt 1)", me2.Who())
	ne := node.AsError(err)
	require.Equal(t, "cassette_mismatch", ne.Code)
	require.True(t, ne.Permanent, "retrying cannot help")
}

func TestAllowNewSendsAndAppends(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.record(t, "r-1", `{"n": 1}`)
	player := opened(t, c).Player("r-2", started, b.mask, true)
	got, err := b.post(t, player.Transport(nil), `{"n": 2}`)
	require.NoError(t, err)
	require.Contains(t, got, `{"n": 2}`, "the live answer")
	require.EqualValues(t, 2, b.calls.Load())
	require.Equal(t, 1, player.Added())
	entries := kept(t, player).Entries
	require.Len(t, entries, 2)
	require.True(t, entries[1].New)

	// Saved, the cassette file has the appended exchange, and the next
	// replay of the file answers it.
	dir := t.TempDir()
	file := filepath.Join(dir, "replayed.jsonl")
	require.NoError(t, c.Write(file))
	require.NoError(t, cassette.Save(player, dir, file))
	for _, path := range []string{file, filepath.Join(dir, cassette.FileName)} {
		back, err := cassette.Read(path)
		require.NoError(t, err)
		require.Equal(t, entries, back.Entries, path)
	}
	again, err := cassette.Open(file)
	require.NoError(t, err)
	t.Cleanup(func() { again.Close() })
	_, err = b.post(t, again.Player("r-3", started, b.mask, false).Transport(offline{t}), `{"n": 2}`)
	require.NoError(t, err)
}

func TestReplayedErrorsAndRepeats(t *testing.T) {
	t.Parallel()
	ctx := node.WithCall(context.Background(), &node.Call{NodeID: "tool", Visit: 2, Attempt: 1})
	rec := cassette.NewRecorder(cassette.Header{RunID: "r-1"}, nil)
	req := map[string]any{"server": "s", "tool": "t"}
	n := 0
	live := func(context.Context) (map[string]any, error) {
		n++
		if n == 2 {
			return nil, &node.Error{Code: "mcp_protocol", Category: node.CategoryConnection, Message: "server died", Permanent: true}
		}
		return map[string]any{"n": n}, nil
	}
	for range 3 { // the same request three times: answers in order
		_, _ = cassette.Do(ctx, rec, cassette.KindMCPCall, req, live)
	}
	for name, play := range players(t, kept(t, rec)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			player := play("r-2", time.Time{}, nil, false)
			never := func(context.Context) (map[string]any, error) { t.Error("live"); return nil, nil }
			v, err := cassette.Do(ctx, player, cassette.KindMCPCall, req, never)
			require.NoError(t, err)
			require.EqualValues(t, 1, v["n"])
			_, err = cassette.Do(ctx, player, cassette.KindMCPCall, req, never)
			ne := node.AsError(err)
			require.Equal(t, "mcp_protocol", ne.Code)
			require.Equal(t, node.CategoryConnection, ne.Category)
			require.True(t, ne.Permanent)
			v, err = cassette.Do(ctx, player, cassette.KindMCPCall, req, never)
			require.NoError(t, err)
			require.EqualValues(t, 3, v["n"])
			_, err = cassette.Do(ctx, player, cassette.KindMCPCall, req, never)
			require.ErrorContains(t, err, "no recording", "a fourth call was never recorded")
		})
	}
}

func TestReadNamesFileAndLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, want string
	}{
		{"not a cassette", "{\"hello\": 1}\n", ":1: not a cassette header"},
		{"bad entry", "{\"cassette\": 1}\n{\"kind\": \"http\", \"hash\": \"h\"}\nnope\n", ":3: invalid character"},
		{"entry without hash", "{\"cassette\": 1}\n{\"kind\": \"http\"}\n", ":2: an entry needs a kind and a hash"},
		{"newer format", "{\"cassette\": 9}\n", ":1: cassette format 9 is newer"},
		{"empty", "", "the cassette is empty"},
		{"blank lines only", "\n  \n", "the cassette is empty"},
		{"header after a blank line", "\n{\"hello\": 1}\n", ":2: not a cassette header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "c.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tc.text), 0o644))
			_, err := cassette.Read(path)
			require.ErrorContains(t, err, path)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := cassette.Read(filepath.Join(t.TempDir(), "none.jsonl"))
	require.ErrorContains(t, err, "record the run with skein run --record")
}

func TestDiff(t *testing.T) {
	t.Parallel()
	got := cassette.Diff([]byte(`{"a": 1, "b": [1, 2], "c": {"d": "x"}, "gone": true}`), []byte(`{"a": 2, "b": [1], "c": {"d": "x", "e": null}, "new": 1}`))
	var lines bytes.Buffer
	for _, c := range got {
		lines.WriteString(c.String() + "\n")
	}
	require.Equal(t, `a: recorded 1, now 2
b[1]: removed (recorded 2)
c.e: added null
gone: removed (recorded true)
new: added 1
`, lines.String())
}

// TestRecordingStreams: while recording, the caller reads a streamed
// answer as it arrives, not once it is whole.
func TestRecordingStreams(t *testing.T) {
	t.Parallel()
	read := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-read // the second piece only once the first was read
		fmt.Fprint(w, "data: second\n\n")
	}))
	t.Cleanup(srv.Close)
	tape := cassette.NewRecorder(cassette.Header{RunID: "r-1"}, nil)
	resp, err := (&http.Client{Transport: tape.Transport(nil)}).Get(srv.URL)
	require.NoError(t, err)
	first := make([]byte, len("data: first\n\n"))
	_, err = io.ReadFull(resp.Body, first)
	require.NoError(t, err)
	require.Equal(t, "data: first\n\n", string(first))
	require.Empty(t, kept(t, tape).Entries, "kept once the answer has ended")
	close(read)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "data: second\n\n", string(rest))
	entries := kept(t, tape).Entries
	require.Len(t, entries, 1)
	require.Contains(t, string(entries[0].Response), `data: first\n\ndata: second\n\n`, "the whole answer")
}

// TestCallClock: a call's clock reads are recorded per call and given
// again in order; past the recorded ones, the replay's own clock.
func TestCallClock(t *testing.T) {
	t.Parallel()
	call := &node.Call{NodeID: "a", Visit: 1, Attempt: 1}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	n := 0
	base := func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
	rec := cassette.NewRecorder(cassette.Header{RunID: "r-1"}, nil)
	now := rec.CallClock(call, base)
	first, second := now(), now()
	other := rec.CallClock(&node.Call{NodeID: "b", Visit: 1, Attempt: 1}, base)()

	later := func() time.Time { return t0.Add(time.Hour) }
	for name, newPlayer := range players(t, kept(t, rec)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			play := newPlayer("r-2", time.Time{}, nil, false)
			now := play.CallClock(call, later)
			require.True(t, first.Equal(now()))
			require.True(t, second.Equal(now()))
			require.True(t, later().Equal(now()), "past the recorded reads")
			require.True(t, later().Equal(now()))
			require.True(t, other.Equal(play.CallClock(&node.Call{NodeID: "b", Visit: 1, Attempt: 1}, later)()))
		})
	}
}

// kept is what tape holds.
func kept(t *testing.T, tape *cassette.Tape) *cassette.Cassette {
	t.Helper()
	c, err := tape.Cassette()
	require.NoError(t, err)
	return c
}

// opened is c written to a file and opened, closed when the test ends.
func opened(t *testing.T, c *cassette.Cassette) *cassette.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), cassette.FileName)
	require.NoError(t, c.Write(path))
	f, err := cassette.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, f.Close()) })
	return f
}

// players are the two ways to replay c: from memory (NewPlayer) and from
// its file (File.Player).
func players(t *testing.T, c *cassette.Cassette) map[string]func(runID string, started time.Time, mask func(string) string, allowNew bool) *cassette.Tape {
	f := opened(t, c)
	return map[string]func(string, time.Time, func(string) string, bool) *cassette.Tape{
		"memory": func(runID string, started time.Time, mask func(string) string, allowNew bool) *cassette.Tape {
			return cassette.NewPlayer(c, runID, started, mask, allowNew)
		},
		"file": f.Player,
	}
}
