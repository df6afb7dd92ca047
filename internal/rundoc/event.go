package rundoc

import (
	"time"

	"github.com/skeinhq/skein/internal/record"
)

// Event is an event of a run as every front end prints it: a line of
// skein runs events and of the MCP resource skein://runs/{id}/events
// (schema/event.schema.json).
type Event struct {
	Seq       int64          `json:"seq"`
	Time      time.Time      `json:"time"`
	Type      string         `json:"type"`
	Node      string         `json:"node,omitempty"`
	Visit     int            `json:"visit"`
	Iteration int            `json:"iteration"`
	Data      map[string]any `json:"data,omitempty"`
}

// EventLine is ev as an Event.
func EventLine(ev record.EventRow) Event {
	return Event{Seq: ev.Seq, Time: ev.Time, Type: ev.Type, Node: ev.Node, Visit: ev.Visit, Iteration: ev.Iteration, Data: ev.Data}
}
