package rundoc

import (
	"strconv"
	"time"

	"github.com/skeinhq/skein/internal/plainjson"
)

// appendStep appends s as encoding/json writes it in a run document
// (compact, HTML characters unescaped), without reflection: a run's steps
// are most of its run.json, and encoding them was most of a big run's
// end. It reports false, having appended part of the text or nothing,
// when a field is one it leaves to encoding/json: an error, artifacts, a
// string, a map or a number that is not plain (see plainjson), a time
// outside years 0–9999. TestStepTextIsEncodingJSONs checks it against
// encoding/json.
func appendStep(b []byte, s *Step) ([]byte, bool) {
	if s.Error != nil || len(s.Artifacts) > 0 {
		return b, false
	}
	var ok bool
	str := func(key, v string) {
		if ok {
			b = append(b, key...)
			b, ok = plainjson.AppendString(b, v, false)
		}
	}
	num := func(key string, v int64) {
		if ok {
			b = append(b, key...)
			b = strconv.AppendInt(b, v, 10)
		}
	}
	flag := func(key string, v bool) {
		if ok {
			b = append(b, key...)
			b = strconv.AppendBool(b, v)
		}
	}
	float := func(key string, v float64) {
		if ok {
			b = append(b, key...)
			b, ok = plainjson.AppendFloat(b, v)
		}
	}
	when := func(key string, t *time.Time) {
		if !ok {
			return
		}
		b = append(b, key...)
		if t == nil {
			b = append(b, "null"...)
			return
		}
		if y := t.Year(); y < 0 || y > 9999 {
			ok = false
			return
		}
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	object := func(key string, m map[string]any) {
		if ok {
			b = append(b, key...)
			b, ok = plainjson.AppendMap(b, m, false)
		}
	}

	b = append(b, '{')
	ok = true
	str(`"node":`, s.Node)
	str(`,"type":`, s.Type)
	str(`,"status":`, string(s.Status))
	num(`,"visit":`, int64(s.Visit))
	num(`,"iteration":`, int64(s.Iteration))
	num(`,"attempts":`, int64(s.Attempts))
	if s.SkipReason != "" {
		str(`,"skip_reason":`, s.SkipReason)
	}
	if s.TakenHandle != "" {
		str(`,"taken_handle":`, s.TakenHandle)
	}
	num(`,"step_order":`, int64(s.StepOrder))
	if len(s.Params) > 0 {
		object(`,"params":`, s.Params)
	}
	object(`,"output":`, s.Output)
	if ok {
		b = append(b, `,"error":null`...)
	}
	flag(`,"cached":`, s.Cached)
	flag(`,"pinned":`, s.Pinned)
	when(`,"started_at":`, s.StartedAt)
	when(`,"finished_at":`, s.FinishedAt)
	num(`,"duration_ms":`, s.DurationMS)
	num(`,"tokens":`, int64(s.Tokens))
	float(`,"cost_usd":`, s.CostUSD)
	if s.WakeAt != nil {
		when(`,"wake_at":`, s.WakeAt)
	}
	if s.RanOn != nil {
		str(`,"ran_on":{"host":`, s.RanOn.Host)
		if s.RanOn.PID != 0 {
			num(`,"pid":`, int64(s.RanOn.PID))
		}
		if s.RanOn.Worker != "" {
			str(`,"worker":`, s.RanOn.Worker)
		}
		if ok {
			b = append(b, '}')
		}
	}
	if s.Confidence != nil {
		float(`,"confidence_score":`, *s.Confidence)
	}
	if !ok {
		return b, false
	}
	return append(b, '}'), true
}
