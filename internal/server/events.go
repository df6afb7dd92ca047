package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/record"
)

// EventDoc is one event of a run, the data of a Server-Sent Event: the
// shape of a line of `skein runs events`.
type EventDoc struct {
	Seq       int64          `json:"seq"`
	Time      time.Time      `json:"time"`
	Type      string         `json:"type"`
	Node      string         `json:"node,omitempty"`
	Visit     int            `json:"visit"`
	Iteration int            `json:"iteration"`
	Data      map[string]any `json:"data,omitempty"`
}

// eventBatch is how many events one read of the store returns.
const eventBatch = 500

// runEvents streams a run's events as Server-Sent Events: each event's id
// is its sequence number in the run (1, 2, 3…, stable), so a client that
// reconnects with Last-Event-ID (or ?after=N) gets every later event once.
// The stream follows the run until it ends, then sends an `end` event
// (no id) with the run's status and outputs (a chat run's reply) and
// closes.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var after int64
	last, given := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if last == "" {
		last, given = r.URL.Query().Get("after"), "after"
	}
	if last != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(last), 10, 64)
		if err != nil || n < 0 {
			return problemf(http.StatusBadRequest, CodeBadRequest, "%s %q is not an event id (a whole number, 0 or more)", given, last)
		}
		after = n
	}
	ctx := r.Context()
	wake := s.hub.wait(id)
	evs, run, err := s.cfg.Runner.Events(ctx, id, after, eventBatch)
	if err != nil {
		s.hub.forget(id, wake)
		return err
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	poll := time.NewTicker(s.cfg.EventPoll)
	defer poll.Stop()
	idle := time.NewTimer(s.cfg.KeepAlive)
	defer idle.Stop()
	for {
		for _, ev := range evs {
			ev.Data = s.paths.Values(ev.Data)
			if err := writeEvent(w, ev); err != nil {
				return nil // the client left
			}
			after = ev.Seq
		}
		if len(evs) > 0 || !live(run.Status) {
			if err := rc.Flush(); err != nil {
				return nil
			}
		}
		switch {
		case len(evs) == eventBatch:
			// More may be waiting: read on at once.
		case !live(run.Status):
			// The run's last events commit with its final status, so
			// none can follow what was just read.
			s.hub.forget(id, wake)
			data, _ := json.Marshal(map[string]any{"execution_id": run.ID, "status": run.Status, "outputs": s.paths.Values(run.Outputs)})
			_, _ = fmt.Fprintf(w, "event: end\ndata: %s\n\n", data)
			_ = rc.Flush()
			return nil
		default:
			select {
			case <-ctx.Done():
				s.hub.forget(id, wake)
				return nil
			case <-s.closing:
				s.hub.forget(id, wake)
				return nil
			case <-wake:
				wake = s.hub.wait(id)
			case <-poll.C:
			case <-idle.C:
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
					return nil
				}
				idle.Reset(s.cfg.KeepAlive)
				continue
			}
		}
		if evs, run, err = s.cfg.Runner.Events(ctx, id, after, eventBatch); err != nil {
			s.log.Warn("reading events", "run", id, "err", err)
			return nil // the answer has begun: end the stream; the client reconnects
		}
	}
}

// writeEvent writes one event as a Server-Sent Event.
func writeEvent(w http.ResponseWriter, ev record.EventRow) error {
	data, err := json.Marshal(EventDoc{Seq: ev.Seq, Time: ev.Time, Type: ev.Type, Node: ev.Node, Visit: ev.Visit,
		Iteration: ev.Iteration, Data: ev.Data})
	if err != nil {
		data, _ = json.Marshal(EventDoc{Seq: ev.Seq, Time: ev.Time, Type: ev.Type, Node: ev.Node, Visit: ev.Visit, Iteration: ev.Iteration,
			Data: map[string]any{"error": "the event's data could not be encoded: " + err.Error()}})
	}
	_, err = fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, data)
	return err
}
