package runlog

import (
	"strconv"
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/plainjson"
)

// appendEventLine appends ev as the line of events.jsonl encoding/json
// writes for its eventLine (HTML characters unescaped), without
// reflection: most events are a node's start and end, and encoding their
// lines was ~4% of a node's CPU in `skein run`. It reports false, having
// appended part of a line or nothing, when a string or a data value is
// not plain (see plainjson) or the time is outside years 0–9999: those
// lines are encoding/json's to write. TestEventLinesAreEncodingJSONs
// checks it against encoding/json.
func appendEventLine(b []byte, ev engine.TimedEvent) ([]byte, bool) {
	t := ev.Time.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	b = append(b, `{"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","type":`...)
	var ok bool
	if b, ok = plainjson.AppendString(b, ev.Type, false); !ok {
		return b, false
	}
	if ev.Node != "" {
		b = append(b, `,"node":`...)
		if b, ok = plainjson.AppendString(b, ev.Node, false); !ok {
			return b, false
		}
	}
	b = append(b, `,"visit":`...)
	b = strconv.AppendInt(b, int64(ev.Visit), 10)
	b = append(b, `,"iteration":`...)
	b = strconv.AppendInt(b, int64(ev.Iteration), 10)
	if len(ev.Data) > 0 {
		b = append(b, `,"data":`...)
		if b, ok = plainjson.AppendMap(b, ev.Data, false); !ok {
			return b, false
		}
	}
	return append(b, "}\n"...), true
}
