package cassette

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
)

// Change is one difference between a recorded request and a replayed one:
// the value at Path, as recorded and as sent now.
type Change struct {
	Path     string `json:"path"`
	Recorded any    `json:"recorded,omitempty"`
	Now      any    `json:"now,omitempty"`
	// Missing says which side has nothing at Path: "recorded" or "now".
	Missing string `json:"missing,omitempty"`
}

func (c Change) String() string {
	switch c.Missing {
	case "recorded":
		return fmt.Sprintf("%s: added %s", c.Path, show(c.Now))
	case "now":
		return fmt.Sprintf("%s: removed (recorded %s)", c.Path, show(c.Recorded))
	}
	return fmt.Sprintf("%s: recorded %s, now %s", c.Path, show(c.Recorded), show(c.Now))
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return clip(string(b), 400)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Diff lists where two JSON texts differ, path by path (maps by key, lists
// by index), in path order. A JSON body inside a string (an HTTP
// request's) is compared as JSON.
func Diff(recorded, now json.RawMessage) []Change {
	var a, b any
	_ = json.Unmarshal(recorded, &a)
	_ = json.Unmarshal(now, &b)
	out := []Change{}
	diff(&out, "", a, b)
	return out
}

func diff(out *[]Change, path string, a, b any) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := k
			if path != "" {
				p = path + "." + k
			}
			av, ain := am[k]
			bv, bin := bm[k]
			switch {
			case !ain:
				*out = append(*out, Change{Path: p, Now: bv, Missing: "recorded"})
			case !bin:
				*out = append(*out, Change{Path: p, Recorded: av, Missing: "now"})
			default:
				diff(out, p, av, bv)
			}
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok {
		for i := range max(len(al), len(bl)) {
			p := path + "[" + strconv.Itoa(i) + "]"
			switch {
			case i >= len(al):
				*out = append(*out, Change{Path: p, Now: bl[i], Missing: "recorded"})
			case i >= len(bl):
				*out = append(*out, Change{Path: p, Recorded: al[i], Missing: "now"})
			default:
				diff(out, p, al[i], bl[i])
			}
		}
		return
	}
	if reflect.DeepEqual(a, b) {
		return
	}
	if path == "" {
		path = "(the request)"
	}
	*out = append(*out, Change{Path: path, Recorded: a, Now: b})
}
