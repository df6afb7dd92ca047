package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
)

// A run's planned steps (store.Batch.Plan) are kept as rows of
// step_plans, one for each batch that planned some: the run's own steps
// when it starts, a loop pass's or a foreach item's when it is planned.
// A row's steps column is a JSON array of [step_order, node, visit,
// iteration, type] arrays. Reading a run's steps lists each planned step
// that has no step row as pending.

const insertPlan = `INSERT INTO step_plans (run_id, generation, steps) VALUES ($1, $2, $3)`

// planArgs returns the arguments of SQL.InsertPlan for the planned steps
// of run runID: a row for each generation they belong to.
func (c *Core) planArgs(runID string, plan []*store.Step) [][]any {
	if len(plan) == 0 {
		return nil
	}
	var rows [][]any
	for len(plan) > 0 {
		gen := generation(plan[0])
		n := 1
		for n < len(plan) && generation(plan[n]) == gen {
			n++
		}
		rows = append(rows, []any{runID, gen, c.d.JSON(encodePlan(plan[:n]))})
		plan = plan[n:]
	}
	return rows
}

// generation is the generation of a step as stored: 0 is taken as 1.
func generation(s *store.Step) int {
	if s.Generation <= 0 {
		return 1
	}
	return s.Generation
}

// encodePlan encodes planned steps as a steps column holds them.
func encodePlan(plan []*store.Step) []byte {
	b := make([]byte, 0, 2+len(plan)*40)
	b = append(b, '[')
	for i, s := range plan {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(s.StepOrder), 10)
		b = append(b, ',')
		b = appendString(b, s.Node)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(s.Visit), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(s.Iteration), 10)
		b = append(b, ',')
		b = appendString(b, s.Type)
		b = append(b, ']')
	}
	return append(b, ']')
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// DecodePlan decodes the steps column of a step_plans row of the run's
// generation gen into the pending steps it plans.
func DecodePlan(runID string, gen int, data []byte) ([]*store.Step, error) {
	return decodePlan(runID, gen, data)
}

// decodePlan decodes a steps column into the pending steps it plans.
func decodePlan(runID string, gen int, data []byte) ([]*store.Step, error) {
	var rows [][]any
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, err
	}
	out := make([]*store.Step, len(rows))
	for i, r := range rows {
		order, okO := number(r, 0)
		node, okN := text(r, 1)
		visit, okV := number(r, 2)
		iter, okI := number(r, 3)
		typ, okT := text(r, 4)
		if len(r) != 5 || !okO || !okN || !okV || !okI || !okT {
			return nil, fmt.Errorf("planned step %d is not [step_order, node, visit, iteration, type]", i+1)
		}
		out[i] = &store.Step{RunID: runID, Generation: gen, Status: record.StatusPending,
			StepOrder: order, Node: node, Visit: visit, Iteration: iter, Type: typ}
	}
	return out, nil
}

// number returns the integer r[i].
func number(r []any, i int) (int, bool) {
	if i >= len(r) {
		return 0, false
	}
	f, ok := r[i].(float64)
	return int(f), ok && f == float64(int(f))
}

// text returns the string r[i].
func text(r []any, i int) (string, bool) {
	if i >= len(r) {
		return "", false
	}
	s, ok := r[i].(string)
	return s, ok
}

// plannedSteps reads the planned steps of the run: of generation gen, or
// of every generation when gen is 0.
func (c *Core) plannedSteps(ctx context.Context, op, runID string, gen int) ([]*store.Step, error) {
	q, args := `SELECT generation, steps FROM step_plans WHERE run_id = $1 ORDER BY id`, []any{runID}
	if gen > 0 {
		q, args = `SELECT generation, steps FROM step_plans WHERE run_id = $1 AND generation = $2 ORDER BY id`, []any{runID, gen}
	}
	rows, err := c.db.Read().Query(ctx, q, args...)
	parts, err := collect(c, op, rows, err, func(row Row) ([]*store.Step, error) {
		var g int
		var data []byte
		if err := row.Scan(&g, &data); err != nil {
			return nil, err
		}
		steps, err := decodePlan(runID, g, data)
		if err != nil {
			return nil, fmt.Errorf("decoding the planned steps of generation %d: %w", g, err)
		}
		return steps, nil
	})
	if err != nil {
		return nil, err
	}
	var out []*store.Step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// withPlanned merges the planned steps into the steps saved, both of the
// run: a planned step with no step row of its key is listed pending, at
// its place by generation and step order (after the saved steps of the
// same place). steps are in the order of the steps' query.
func withPlanned(steps, planned []*store.Step) []*store.Step {
	if len(planned) == 0 {
		return steps
	}
	type key struct {
		gen   int
		node  string
		visit int
	}
	saved := make(map[key]bool, len(steps))
	for _, s := range steps {
		saved[key{generation(s), s.Node, s.Visit}] = true
	}
	// The latest plan of a key counts; a saved step stands in its place.
	latest := make(map[key]int, len(planned))
	for i, p := range planned {
		latest[key{p.Generation, p.Node, p.Visit}] = i
	}
	var pending []*store.Step
	for i, p := range planned {
		k := key{p.Generation, p.Node, p.Visit}
		if !saved[k] && latest[k] == i {
			pending = append(pending, p)
		}
	}
	if len(pending) == 0 {
		return steps
	}
	sort.SliceStable(pending, func(i, j int) bool {
		a, b := pending[i], pending[j]
		if a.Generation != b.Generation {
			return a.Generation < b.Generation
		}
		if a.StepOrder != b.StepOrder {
			return a.StepOrder < b.StepOrder
		}
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		return a.Visit < b.Visit
	})
	before := func(p, s *store.Step) bool {
		if g := generation(s); p.Generation != g {
			return p.Generation < g
		}
		return p.StepOrder < s.StepOrder
	}
	out := make([]*store.Step, 0, len(steps)+len(pending))
	i, j := 0, 0
	for i < len(steps) || j < len(pending) {
		if j < len(pending) && (i == len(steps) || before(pending[j], steps[i])) {
			out = append(out, pending[j])
			j++
			continue
		}
		out = append(out, steps[i])
		i++
	}
	return out
}
