package cassette

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/record"
)

// Divergence is a step of a replay that differs from the recorded run.
type Divergence struct {
	Node  string `json:"node"`
	Visit int    `json:"visit"`
	// What differs: "status", "output", "only_recorded" (the replay did
	// not run it) or "only_replayed".
	What     string `json:"what"`
	Recorded any    `json:"recorded,omitempty"`
	Replayed any    `json:"replayed,omitempty"`
}

// Step is one step of a run as a replay compares it.
type Step struct {
	Node  string
	Visit int
	// Generation and Order place the step in its run: of a node's visit,
	// the last record counts.
	Generation int
	Order      int
	Status     string
	// Output is the step's output, its secrets masked.
	Output any
}

type stepKey struct {
	node  string
	visit int
}

// last are the steps that ended, the last record of each node and visit.
func last(steps []Step) map[stepKey]Step {
	out := map[stepKey]Step{}
	for _, s := range steps {
		if s.Status == "pending" || s.Status == "running" {
			continue
		}
		k := stepKey{s.Node, s.Visit}
		if p, ok := out[k]; !ok || s.Generation > p.Generation || (s.Generation == p.Generation && s.Order > p.Order) {
			out[k] = s
		}
	}
	return out
}

// Runs names a replay and the run it replays: what an output of the
// replay says of its own run — its id, its start time as expressions read
// it (execution.started_at) — is read as said of the recorded run.
type Runs struct {
	ReplayedID, RecordedID       string
	ReplayedStart, RecordedStart time.Time
}

// Diverged compares the steps of a replay with those of the recorded run,
// masked alike, an output that names its own run read as naming the
// recorded run (the same output).
func Diverged(recorded, replayed []Step, runs Runs) []Divergence {
	out := []Divergence{}
	pairs := []string{runs.ReplayedID, runs.RecordedID}
	if !runs.ReplayedStart.IsZero() && !runs.RecordedStart.IsZero() {
		pairs = append(pairs, runs.ReplayedStart.UTC().Format(time.RFC3339), runs.RecordedStart.UTC().Format(time.RFC3339))
	}
	ids := strings.NewReplacer(pairs...)
	was, now := last(recorded), last(replayed)
	for k, s := range now {
		rec, ok := was[k]
		switch {
		case !ok:
			out = append(out, Divergence{Node: k.node, Visit: k.visit, What: "only_replayed", Replayed: s.Status})
		case rec.Status != s.Status:
			out = append(out, Divergence{Node: k.node, Visit: k.visit, What: "status", Recorded: rec.Status, Replayed: s.Status})
		default:
			a, b := asJSON(rec.Output), asJSON(s.Output)
			if bs, err := json.Marshal(b); err == nil {
				_ = json.Unmarshal([]byte(ids.Replace(string(bs))), &b)
			}
			if m, ok := a.(map[string]any); ok {
				delete(m, "_directives") // the store keeps them with the output
			}
			maskCookies(a)
			maskCookies(b)
			if !reflect.DeepEqual(a, b) {
				out = append(out, Divergence{Node: k.node, Visit: k.visit, What: "output", Recorded: a, Replayed: b})
			}
		}
	}
	for k, rec := range was {
		if _, ok := now[k]; !ok {
			out = append(out, Divergence{Node: k.node, Visit: k.visit, What: "only_recorded", Recorded: rec.Status})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Visit < out[j].Visit
	})
	return out
}

// DivergedRuns compares the steps of a replay with the recorded steps of
// the run it replays (Diverged); mask masks the replayed outputs as the
// recorded ones were masked when they were stored.
func DivergedRuns(recorded, replayed []*record.Step, runs Runs, mask func(map[string]any) map[string]any) []Divergence {
	was := make([]Step, len(recorded))
	for i, s := range recorded {
		was[i] = Step{Node: s.Node, Visit: s.Visit, Generation: s.Generation, Order: s.StepOrder, Status: string(s.Status), Output: s.Output}
	}
	now := make([]Step, len(replayed))
	for i, s := range replayed {
		now[i] = Step{Node: s.Node, Visit: s.Visit, Order: s.StepOrder, Status: string(s.Status), Output: mask(s.Output)}
	}
	return Diverged(was, now, runs)
}

// maskCookies masks the cookie an HTTP answer's output sets (an http
// node's headers), as the cassette kept it: a replay sets the masked one.
func maskCookies(out any) {
	m, _ := out.(map[string]any)
	h, _ := m["headers"].(map[string]any)
	if c, ok := h["set-cookie"].(string); ok {
		h["set-cookie"] = MaskCookie(c)
	}
}

// asJSON is v as its JSON decodes: numbers float64, so the recorded and
// replayed outputs compare as JSON would.
func asJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// ReplayEnv is the environment of a replay: the model settings the
// cassette recorded, and a stand-in for a secret or a model's API key that
// is not set (the cassette holds them masked, and a replay sends nothing).
// declared are the secrets the workflow declares.
func ReplayEnv(getenv func(string) (string, bool), declared []string, recorded map[string]string) func(string) (string, bool) {
	secrets := map[string]bool{}
	for _, s := range declared {
		secrets[s] = true
	}
	return func(k string) (string, bool) {
		if v, ok := recorded[k]; ok {
			return v, true // the models the recorded run used
		}
		if v, ok := getenv(k); ok {
			return v, true
		}
		name, isSecret := strings.CutPrefix(k, "SKEIN_SECRET_")
		if isSecret && secrets[name] {
			if v, ok := getenv(name); ok {
				return v, true
			}
			return "skein-replay-stand-in-for-" + name, true
		}
		if strings.HasSuffix(k, "API_KEY") {
			return "skein-replay-stand-in-key", true
		}
		return "", false
	}
}
