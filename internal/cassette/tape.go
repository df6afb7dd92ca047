package cassette

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skeinhq/skein/node"
)

// Service is the key of the run's *Tape in node.Call.Services. A host
// that neither records nor replays provides none.
var Service = node.NewService[*Tape]("a cassette")

// Tape records or replays the interactions of one execution. Its methods
// are safe for concurrent use.
type Tape struct {
	*reel
	// scope prefixes the node ids of its requests: a child run's nodes
	// ("child/") are not the parent's (Scoped).
	scope string
}

// reel is what a tape and its scoped views share.
type reel struct {
	replay   bool
	allowNew bool
	mask     func(string) string
	// ids are the run's own values requests may hold (its id, its start)
	// and the placeholder each is written as.
	ids    *strings.Replacer
	header Header
	// file is the replayed cassette: a replay reads an entry from it when
	// it looks at it, and holds only what it answers with.
	file *File

	mu sync.Mutex
	// used are the file's entries a replay has answered with, by slot.
	used []bool
	// entries are the recorded entries, or those a replay added.
	entries    []*Entry
	mismatches []*MismatchError
	// clocks are the times each call read (recorded, or to replay, read
	// from the file at the call's first read and let go once given), and
	// clockAt how many of them a replay has given.
	clocks  map[key][]time.Time
	clockAt map[key]int
}

// Placeholders of the run's own values in recorded requests.
const (
	RunIDPlaceholder     = "<execution.id>"
	StartedAtPlaceholder = "<execution.started_at>"
)

// NewRecorder returns a tape that passes every request on and keeps the
// exchange. mask masks the run's secrets (nil: none). h names the run: its
// id and start are written as placeholders in requests.
func NewRecorder(h Header, mask func(string) string) *Tape {
	return &Tape{reel: &reel{mask: orIdentity(mask), ids: idReplacer(h.RunID, h.StartedAt), header: h, clocks: map[key][]time.Time{}}}
}

// NewPlayer returns a tape that answers requests from c, a cassette in
// memory (a replay of a file opens it: File.Player). runID and started
// are the replaying run's; mask masks its secrets. With allowNew, a
// request c has no answer for is sent and its exchange added.
func NewPlayer(c *Cassette, runID string, started time.Time, mask func(string) string, allowNew bool) *Tape {
	return inMemory(c).Player(runID, started, mask, allowNew)
}

// Player returns a tape that answers requests from f, reading each entry
// when it looks at it (NewPlayer). f must stay open while the tape is in
// use.
func (f *File) Player(runID string, started time.Time, mask func(string) string, allowNew bool) *Tape {
	return &Tape{reel: &reel{
		replay: true, allowNew: allowNew, mask: orIdentity(mask), ids: idReplacer(runID, started), header: f.Header,
		file: f, used: make([]bool, f.Len()), clocks: map[key][]time.Time{}, clockAt: map[key]int{},
	}}
}

func orIdentity(f func(string) string) func(string) string {
	if f == nil {
		return func(s string) string { return s }
	}
	return f
}

func idReplacer(runID string, started time.Time) *strings.Replacer {
	var pairs []string
	if runID != "" {
		pairs = append(pairs, runID, RunIDPlaceholder)
	}
	if !started.IsZero() {
		pairs = append(pairs, started.UTC().Format(time.RFC3339), StartedAtPlaceholder)
	}
	return strings.NewReplacer(pairs...)
}

// Scoped returns a view of t whose requests are those of a child run of
// the workflow named name: its nodes are written "name/node", its MCP
// servers' tool lists kept apart from the parent's.
func (t *Tape) Scoped(name string) *Tape {
	return &Tape{reel: t.reel, scope: t.scope + name + "/"}
}

// Replaying reports whether t answers from a cassette.
func (t *Tape) Replaying() bool { return t.replay }

// Cassette returns what t holds: the recorded entries, or the replayed
// cassette's read back whole with the ones a replay added. Save writes a
// tape without holding it whole.
func (t *Tape) Cassette() (*Cassette, error) {
	if t.replay {
		entries, err := t.file.entries()
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		return &Cassette{Header: t.header, Entries: append(entries, t.entries...)}, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return &Cassette{Header: t.header, Entries: t.recorded()}, nil
}

// recorded are a recorder's entries, its calls' clocks last.
func (t *Tape) recorded() []*Entry {
	out := append([]*Entry(nil), t.entries...)
	keys := make([]key, 0, len(t.clocks))
	for k := range t.clocks {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.visit, b.visit), cmp.Compare(a.attempt, b.attempt))
	})
	for _, k := range keys {
		b, _ := json.Marshal(t.clocks[k])
		out = append(out, &Entry{Kind: KindClock, Node: k.node, Visit: k.visit, Attempt: k.attempt, Hash: KindClock, Request: json.RawMessage("null"), Response: b})
	}
	return out
}

// WriteFile writes t's cassette (Cassette) to path atomically, a replayed
// cassette's entries copied line by line from its file.
func (t *Tape) WriteFile(path string) error {
	t.mu.Lock()
	h := t.header
	entries := t.entries
	if !t.replay {
		entries = t.recorded()
	}
	entries = slices.Clip(entries) // the entries a replay adds meanwhile are not these
	t.mu.Unlock()
	return writeAtomic(path, h, func(w io.Writer) error {
		if t.replay {
			if err := t.file.writeEntries(w); err != nil {
				return err
			}
		}
		return encode(w, entries)
	})
}

// CallClock is the clock of a call (node.Clock): when recording, base's
// times, kept; when replaying, the times the call read when recorded, in
// order, then base's once they run out.
func (t *Tape) CallClock(c *node.Call, base func() time.Time) func() time.Time {
	k := key{kind: KindClock, node: t.scope + c.NodeID, visit: c.Visit, attempt: c.Attempt}
	return func() time.Time {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.replay {
			times, ok := t.clocks[k]
			if !ok {
				times = t.recordedClock(k)
				t.clocks[k] = times
			}
			if i := t.clockAt[k]; i < len(times) {
				t.clockAt[k] = i + 1
				if i+1 == len(times) {
					t.clocks[k] = nil // all given
				}
				return times[i]
			}
			return base()
		}
		now := base()
		t.clocks[k] = append(t.clocks[k], now)
		return now
	}
}

var _ node.Clock = (*Tape)(nil)

// recordedClock reads the times the call of k read when recorded. An
// entry that does not read or decode gives none: the call reads the
// replay's clock instead.
func (t *Tape) recordedClock(k key) []time.Time {
	var out []time.Time
	lo, hi := t.file.callers(k)
	for i := lo; i < hi; i++ {
		e, err := t.file.entry(i)
		if err != nil || !e.is(k) {
			continue
		}
		var times []time.Time
		if json.Unmarshal(e.Response, &times) == nil {
			out = append(out, times...)
		}
	}
	return out
}

// Added is how many entries a replay added (--allow-new).
func (t *Tape) Added() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.replay {
		return 0
	}
	return len(t.entries)
}

// Mismatches are the requests a replay found no answer for, in the order
// they were made.
func (t *Tape) Mismatches() []*MismatchError {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*MismatchError(nil), t.mismatches...)
}

// key is who makes a request.
type key struct {
	kind, node     string
	visit, attempt int
}

func (t *Tape) keyOf(ctx context.Context, kind string) key {
	k := key{kind: kind}
	if kind == KindMCPTools {
		k.node = strings.TrimSuffix(t.scope, "/")
		return k // the server's, not the call's
	}
	if c := node.CallFrom(ctx); c != nil {
		k.node, k.visit, k.attempt = t.scope+c.NodeID, c.Visit, c.Attempt
	}
	return k
}

// masked is a request as the cassette keeps it, and its hash.
type masked struct {
	json json.RawMessage
	hash string
}

// request masks req and hashes it without its "host" field.
func (t *Tape) request(req any) (masked, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return masked{}, fmt.Errorf("cassette: encoding a request: %w", err)
	}
	m := []byte(t.ids.Replace(t.mask(string(b))))
	var v any
	if err := json.Unmarshal(m, &v); err != nil {
		return masked{}, fmt.Errorf("cassette: a masked request is not JSON: %w", err)
	}
	if o, ok := v.(map[string]any); ok {
		delete(o, "host")
	}
	h, _ := json.Marshal(v) // map keys sorted: canonical
	sum := sha256.Sum256(h)
	return masked{json: m, hash: hex.EncodeToString(sum[:])}, nil
}

// Do makes one interaction of the calling node (node.CallFrom(ctx)): when
// recording it calls live and keeps req with the answer; when replaying it
// answers from the cassette and never calls live, but with allowNew when
// the cassette has no answer. req and T must encode as JSON.
func Do[T any](ctx context.Context, t *Tape, kind string, req any, live func(context.Context) (T, error)) (T, error) {
	var zero T
	k := t.keyOf(ctx, kind)
	m, err := t.request(req)
	if err != nil {
		return zero, err
	}
	if t.replay {
		e, merr, err := t.find(k, m)
		if err != nil {
			return zero, &node.Error{Code: "cassette", Category: node.CategoryInternal, Permanent: true, Message: err.Error(), Err: err}
		}
		if e != nil {
			return answer[T](e)
		}
		if !t.allowNew {
			return zero, merr.NodeError()
		}
	}
	v, lerr := live(ctx)
	t.keep(k, m, v, lerr)
	return v, lerr
}

// answer decodes a recorded answer.
func answer[T any](e *Entry) (T, error) {
	var v T
	if e.Error != nil {
		return v, &node.Error{Code: e.Error.Code, Category: e.Error.Category, Message: e.Error.Message,
			Details: e.Error.Details, Permanent: e.Error.Permanent}
	}
	if err := json.Unmarshal(e.Response, &v); err != nil {
		return v, &node.Error{Code: "cassette", Category: node.CategoryInternal, Permanent: true,
			Message: fmt.Sprintf("node %s: the cassette's %s answer does not decode: %v", e.Node, e.Kind, err)}
	}
	return v, nil
}

// keep adds an exchange: its answer v, or its error.
func (t *Tape) keep(k key, m masked, v any, err error) {
	e := &Entry{Kind: k.kind, Node: k.node, Visit: k.visit, Attempt: k.attempt, Hash: m.hash, Request: m.json, New: t.replay}
	if err != nil {
		ne := node.AsError(err)
		var details map[string]any
		if ne.Details != nil {
			if b, derr := json.Marshal(ne.Details); derr == nil {
				_ = json.Unmarshal([]byte(t.mask(string(b))), &details)
			}
		}
		e.Error = &Error{Code: ne.Code, Category: ne.Category, Message: t.mask(ne.Message), Details: details, Permanent: ne.Permanent}
	} else {
		b, merr := json.Marshal(v)
		if merr != nil {
			e.Error = &Error{Code: "cassette", Category: node.CategoryInternal, Message: "the answer could not be recorded: " + merr.Error()}
		} else {
			e.Response = json.RawMessage(t.mask(string(b)))
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries = append(t.entries, e)
}

// find returns the unused entry of k with m's hash (a tool list may be
// used again), or the mismatch that says how the request differs from the
// first unused entry of k. The entries a replay added come after the
// file's; they are used, but a tool list. It reads from the file only the
// entries whose hashes match, and the first unused one of a mismatch.
func (t *Tape) find(k key, m masked) (*Entry, *MismatchError, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.file
	lo, hi := f.callers(k)
	open := func(i int) bool { return !t.used[i] || k.kind == KindMCPTools }
	sum := f.sum(m.hash)
	for i := lo; i < hi; i++ {
		if !open(i) || f.slots[i].req != sum {
			continue
		}
		e, err := f.entry(i)
		if err != nil {
			return nil, nil, err
		}
		if e.is(k) && e.Hash == m.hash {
			t.used[i] = true
			return e, nil, nil
		}
	}
	if k.kind == KindMCPTools {
		for _, e := range t.entries {
			if e.is(k) && e.Hash == m.hash {
				return e, nil, nil
			}
		}
	}
	var first *Entry
	for i := lo; i < hi && first == nil; i++ {
		if !open(i) {
			continue
		}
		e, err := f.entry(i)
		if err != nil {
			return nil, nil, err
		}
		if e.is(k) {
			first = e
		}
	}
	if first == nil && k.kind == KindMCPTools {
		for _, e := range t.entries {
			if e.is(k) {
				first = e
				break
			}
		}
	}
	me := &MismatchError{Kind: k.kind, Node: k.node, Visit: k.visit, Attempt: k.attempt, Got: m.json}
	if first != nil {
		me.Recorded = first.Request
		me.Diff = Diff(first.Request, m.json)
	}
	t.mismatches = append(t.mismatches, me)
	return nil, me, nil
}

// MismatchError is a replayed request the cassette has no answer for.
type MismatchError struct {
	Kind    string `json:"kind"`
	Node    string `json:"node"`
	Visit   int    `json:"visit"`
	Attempt int    `json:"attempt"`
	// Recorded is the request the node made there when recorded; nil when
	// it made none (Diff is then empty).
	Recorded json.RawMessage `json:"recorded,omitempty"`
	Got      json.RawMessage `json:"got"`
	Diff     []Change        `json:"diff"`
}

func (e *MismatchError) Error() string { return e.text(e.Who()) }

// Who names the node that made the request: "node a (visit 1, attempt 1)".
func (e *MismatchError) Who() string {
	if e.Node == "" {
		return "a request made outside any node"
	}
	return fmt.Sprintf("node %s (visit %d, attempt %d)", e.Node, e.Visit, e.Attempt)
}

func (e *MismatchError) text(who string) string {
	var b strings.Builder
	if e.Recorded == nil {
		fmt.Fprintf(&b, "%s made a %s request the cassette has no recording of: %s", who, e.Kind, clip(string(e.Got), 300))
	} else {
		fmt.Fprintf(&b, "%s made a %s request that differs from the recorded one:", who, e.Kind)
		for _, c := range e.Diff {
			b.WriteString("\n  " + c.String())
		}
	}
	b.WriteString("\n(skein replay --allow-new, or skein test --update for a test's cassette, sends such requests live and records the answers)")
	return b.String()
}

// NodeError is e as the failing node's error: permanent, code
// cassette_mismatch, the diff in its details.
func (e *MismatchError) NodeError() *node.Error {
	// The engine names the node before the message: "node a: it …".
	return &node.Error{Code: "cassette_mismatch", Category: node.CategoryValidation, Permanent: true,
		Message: e.text(fmt.Sprintf("it (visit %d, attempt %d)", e.Visit, e.Attempt)), Details: map[string]any{"diff": e.Diff}, Err: e}
}

// AsNodeError returns err as a node error when it is (or wraps) a
// mismatch, so that callers that wrap errors keep the mismatch's message.
func AsNodeError(err error) (*node.Error, bool) {
	var me *MismatchError
	if errors.As(err, &me) {
		return me.NodeError(), true
	}
	return nil, false
}
