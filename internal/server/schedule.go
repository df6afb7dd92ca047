package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/skeinhq/skein/internal/nodes/trigger"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/schedule"
)

// scheduleTriggers are the schedule triggers of the workflows a catalog
// serves. Their parameters were checked when the workflow was validated; a
// workflow a schedule cannot start (a required input without a default)
// is reported now, and each of its fires will fail.
func (s *Server) scheduleTriggers(c *Catalog) []schedule.Trigger {
	var out []schedule.Trigger
	for _, e := range c.Workflows {
		for _, n := range e.W.Nodes {
			if n.Type != trigger.Schedule || n.Disabled {
				continue
			}
			if _, err := e.W.ResolveInputs(map[string]any{}); err != nil {
				s.log.Warn("a schedule gives no inputs, so its runs cannot start; give the inputs defaults", "workflow", e.Name,
					"trigger", n.ID, "err", err)
			}
			str := func(name, def string) string {
				if v, ok := n.Params[name].(string); ok && v != "" {
					return v
				}
				return def
			}
			times, err := schedule.Parse(str("cron", ""), str("tz", "UTC"))
			if err != nil {
				continue // validation reported it
			}
			out = append(out, schedule.Trigger{Workflow: e.Name, Node: n.ID, Times: times,
				Missed: str("missed", schedule.MissedSkip), Overlap: str("overlap", schedule.OverlapSkip)})
		}
	}
	return out
}

// scheduleRuns starts the runs of schedule fires through the server.
type scheduleRuns struct{ s *Server }

var _ schedule.Runs = scheduleRuns{}

// Start starts a fire's run of the served workflow, with its declared
// inputs' defaults and the payload {scheduled_at, missed}.
func (sr scheduleRuns) Start(ctx context.Context, fire schedule.Fire) error {
	s := sr.s
	e := s.Catalog().Lookup(fire.Workflow)
	if e == nil {
		return fmt.Errorf("workflow %s is not served any more", fire.Workflow)
	}
	inputs, err := e.W.ResolveInputs(map[string]any{})
	if err != nil {
		return fmt.Errorf("a schedule gives no inputs: %w", err)
	}
	payload := map[string]any{"scheduled_at": fire.At.Format(time.RFC3339), "missed": fire.Missed}
	_, err = s.launch(withSource(ctx, SourceSchedule), "run started by a schedule",
		func(ctx context.Context, o runner.Options) (*runner.Result, error) {
			return s.cfg.Runner.Start(ctx, runner.StartRequest{Workflow: e.W, Inputs: inputs, Trigger: fire.Trigger,
				Payload: payload, RunID: fire.RunID, Options: o})
		})
	return err
}

// State tells whether a fire's run exists and has not ended.
func (sr scheduleRuns) State(ctx context.Context, id string) (bool, bool, error) {
	doc, err := sr.s.cfg.Runner.Get(ctx, id)
	if errors.Is(err, runner.ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	switch record.RunStatus(doc.Status) {
	case record.RunRunning, record.RunPending, record.RunWaiting:
		return true, true, nil
	}
	return true, false, nil
}

// ScheduleDoc is a schedule trigger of a served workflow and its state.
type ScheduleDoc struct {
	Workflow string `json:"workflow"`
	Trigger  string `json:"trigger"`
	Cron     string `json:"cron"`
	TZ       string `json:"tz"`
	Missed   string `json:"missed"`
	Overlap  string `json:"overlap"`
	// NextFire is when it fires next; absent until the scheduler has
	// stored the schedule.
	NextFire  *time.Time `json:"next_fire"`
	LastFire  *time.Time `json:"last_fire"`
	LastRunID string     `json:"last_run_id,omitempty"`
}

// listSchedules serves GET /api/schedules: the schedule triggers served,
// with their stored fire times (in each schedule's time zone).
func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.cfg.Runner.Schedules(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Schedules []ScheduleDoc `json:"schedules"`
	}{Schedules: []ScheduleDoc{}}
	for _, tr := range s.sched.Triggers() {
		cron, tz := tr.Times.Expr()
		d := ScheduleDoc{Workflow: tr.Workflow, Trigger: tr.Node, Cron: cron, TZ: tz, Missed: tr.Missed, Overlap: tr.Overlap}
		for _, row := range rows {
			if row.Workflow != tr.Workflow || row.Trigger != tr.Node || row.Spec != tr.Times.Spec() {
				continue
			}
			loc := tr.Times.Location()
			next := row.NextFire.In(loc)
			d.NextFire = &next
			if !row.LastFire.IsZero() {
				last := row.LastFire.In(loc)
				d.LastFire, d.LastRunID = &last, row.LastRunID
			}
		}
		out.Schedules = append(out.Schedules, d)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
