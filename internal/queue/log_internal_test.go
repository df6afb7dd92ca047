package queue

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
)

// storedBody is an event's stored bytes as encoding/json writes its body
// (storedBodyOf): the format the history has always had, which encode must
// keep byte for byte (every worker and every replay reads it).
func storedBody(t testing.TB, e *event) []byte {
	t.Helper()
	raw, err := storedBodyOf(e)
	require.NoError(t, err)
	return raw
}

func storedBodyOf(e *event) ([]byte, error) {
	var err error
	enc := func(m map[string]any) json.RawMessage {
		if err != nil {
			return nil
		}
		var raw []byte
		raw, err = store.EncodeMap(m)
		return raw
	}
	b := body{
		Payload: enc(e.Payload), Output: enc(e.Output), Directives: enc(e.Directives), Params: enc(e.Params),
		Task: e.Task, Timer: e.Timer, NotStarted: e.NotStarted, Hash: e.Hash, RanOn: e.RanOn,
	}
	if e.Kind == kindSignal {
		b.Data = enc(map[string]any{"data": e.Data})
	}
	if err != nil {
		return nil, err
	}
	if e.Err != nil {
		if b.Err, err = store.EncodeError(e.Err); err != nil {
			return nil, err
		}
	}
	if !e.Started.IsZero() {
		b.Started = &e.Started
	}
	if !e.Sent.IsZero() {
		b.Sent = &e.Sent
	}
	return json.Marshal(b)
}

// httpFinished is the event of an http node's outcome, as a worker feeds it.
func httpFinished() *event {
	at := time.Date(2026, 12, 6, 2, 40, 1, 123456789, time.UTC)
	return &event{
		Seq: 42, Kind: kindFinished, At: at, Task: 17,
		Output:  map[string]any{"status": 200, "headers": map[string]any{"Content-Type": "application/json", "Content-Length": "2"}, "body": map[string]any{}},
		Params:  map[string]any{"url": "http://127.0.0.1:18766/", "method": "GET"},
		Started: at.Add(-time.Millisecond), Hash: "5f2c0e1f9a4b7d3c8e6a1b2c3d4e5f60",
	}
}

// eventCases are events of every kind and field, with the text encoding/json
// escapes (<, >, &, U+2028), bytes that are not UTF-8, times in a zone of
// their own and a hash that needs quoting.
func eventCases() map[string]*event {
	zone := time.FixedZone("IST", 5*3600+1800)
	at := time.Date(2026, 12, 6, 8, 10, 0, 5, zone)
	return map[string]*event{
		"http finished": httpFinished(),
		"start":         {Seq: 1, Kind: kindStart, At: at, Payload: map[string]any{"n": 3, "f": 2.5, "big": 1 << 60, "s": "a<b>&c\u2028d", "list": []any{true, nil, "x"}}},
		"failed": {Seq: 2, Kind: kindFinished, At: at, Task: 3, Err: &node.Error{Code: "http_status", Category: node.CategoryExecution, Message: "500 <Internal> & more", Details: map[string]any{"status": 500}},
			Directives: map[string]any{"_retry": map[string]any{"after": 2}}, Started: at, NotStarted: true, Hash: `a"b\c`},
		"began":      {Seq: 3, Kind: kindBegan, At: at, Task: 4, RanOn: &record.Place{Host: "w1", PID: 77, Worker: "w-1"}},
		"timer":      {Seq: 4, Kind: kindTimer, At: at, Timer: 9},
		"signal":     {Seq: 5, Kind: kindSignal, At: at, Node: "approve", Visit: 2, Data: map[string]any{"ok": true, "who": "ann\xffbob"}, Sent: at.Add(time.Second)},
		"signal nil": {Seq: 6, Kind: kindSignal, At: at, Node: "approve"},
		"cancel":     {Seq: 7, Kind: kindCancel, At: at},
		"bad bytes":  {Seq: 8, Kind: kindFinished, At: at, Task: 5, Output: map[string]any{"stdout": "\xfe\xff raw", "stderr": ""}},
	}
}

// TestEventEncodingKeepsTheStoredFormat: what encode writes is, byte for
// byte, the body encoding/json writes, and the event roundTrip hands the
// scheduler is the one a replay decodes from those bytes.
func TestEventEncodingKeepsTheStoredFormat(t *testing.T) {
	for name, e := range eventCases() {
		t.Run(name, func(t *testing.T) {
			want := storedBody(t, e)
			raw, err := e.encode()
			require.NoError(t, err)
			require.Equal(t, string(want), string(raw))

			back, stored, err := e.roundTrip(nil)
			require.NoError(t, err)
			require.Equal(t, string(want), string(stored))
			replayed, err := decodeEvent(e.Seq, e.Kind, e.At, e.Node, e.Visit, want)
			require.NoError(t, err)
			require.Equal(t, replayed, back)
		})
	}
}

// FuzzEventEncoding: for any text, number and hash in an event's fields,
// encode writes what encoding/json writes and roundTrip gives what a
// replay decodes.
func FuzzEventEncoding(f *testing.F) {
	f.Add("plain", int64(3), 2.5, "abc", int64(1_700_000_000))
	f.Add("a<b>&c\u2028\u2029", int64(-1), math.Copysign(0, -1), `q"\`, int64(0))
	f.Add("\xff\xfe\x00\t\n", int64(1)<<62, 1e300, "\u00e9\x01", int64(-62135596800))
	f.Add("zone", int64(44), 1.0, "\xffhash", int64(1_800_000_000)) // an offset of 44 s, a hash not UTF-8
	f.Fuzz(func(t *testing.T, s string, n int64, x float64, hash string, unix int64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			x = 0
		}
		when := time.Unix(unix%253402300799, n%1_000_000_000).In(time.FixedZone("", int(n%50000)))
		for _, e := range []*event{
			{Seq: 1, Kind: kindFinished, At: when, Task: n, Hash: hash, Started: when,
				Output: map[string]any{"s": s, "n": n, "x": x, "list": []any{s, n, x, nil, true}},
				Params: map[string]any{s: map[string]any{s: s}}},
			{Seq: 2, Kind: kindSignal, At: when, Node: s, Visit: int(n % 1000), Data: s, Sent: when},
			{Seq: 3, Kind: kindBegan, At: when, Task: n, RanOn: &record.Place{Host: s, PID: int(n % 100000), Worker: hash}},
		} {
			want, wantErr := storedBodyOf(e)
			raw, err := e.encode()
			if wantErr != nil {
				require.Error(t, err)
				continue
			}
			require.NoError(t, err)
			require.Equal(t, string(want), string(raw))
			back, _, err := e.roundTrip(nil)
			require.NoError(t, err)
			replayed, err := decodeEvent(e.Seq, e.Kind, e.At, e.Node, e.Visit, want)
			require.NoError(t, err)
			require.Equal(t, replayed, back)
		}
	})
}

// TestEventEncodingRefusesWhatJSONCannotHold: a time JSON cannot write
// fails the event's encoding, as encoding/json fails it.
func TestEventEncodingRefusesWhatJSONCannotHold(t *testing.T) {
	e := httpFinished()
	e.Started = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := e.encode()
	require.Error(t, err)
	_, _, err = e.roundTrip(nil)
	require.Error(t, err)
}

// BenchmarkEventRoundTrip: what a worker spends on each event it records
// (an http node's outcome) to feed its scheduler what a replay reads.
func BenchmarkEventRoundTrip(b *testing.B) {
	e := httpFinished()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := e.roundTrip(nil); err != nil {
			b.Fatal(err)
		}
	}
}
