package cli_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

// exampleServer is a small API with the shape examples/http.yaml expects.
// Its first answer for an item is a 503, so the example's retry shows.
func exampleServer(t *testing.T) *httptest.Server {
	var itemCalls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if itemCalls.Add(1) == 1 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id": %s, "name": "widget", "price": 2.5}`, r.PathValue("id"))
	})
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body["quantity"] == float64(0) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"error": "quantity must be positive"}`)
			return
		}
		if r.Header.Get("Idempotency-Key") == "" {
			http.Error(w, "missing Idempotency-Key", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"order": "o-%v", "total": %v}`, body["item"], body["total"])
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestExampleGoldens runs the runnable examples with `skein run --output
// json` and compares the result — status, outputs, and every step's node,
// status, iteration, attempts and output — with testdata/examples/*.json.
// Times, ids and the order of steps that ran concurrently are left out.
func TestExampleGoldens(t *testing.T) {
	t.Parallel()
	srv := exampleServer(t)
	tests := []struct {
		name string
		args []string
	}{
		{"hello", []string{"../../examples/hello.yaml", "-i", "who=Ada"}},
		{"branches", []string{"../../examples/branches.yaml"}},
		{"loops", []string{"../../examples/loops.yaml"}},
		{"foreach", []string{"../../examples/foreach.yaml"}},
		{"retry-cycle", []string{"../../examples/retry-cycle.yaml"}},
		{"routing", []string{"../../examples/routing.yaml", "-i", "topic=invoice"}},
		{"fallback", []string{"../../examples/fallback.yaml"}},
		{"subworkflow", []string{"../../examples/subworkflow.yaml"}},
		{"shell", []string{"../../examples/shell.yaml", "-i", "word=$(id); rm -rf /"}},
		{"http", []string{"../../examples/http.yaml", "-i", "base_url=" + srv.URL}},
		{"http-fallback", []string{"../../examples/http.yaml", "-i", "base_url=" + srv.URL, "-i", "quantity=0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := skein(t, append([]string{"run", "--output", "json", "--dir", t.TempDir()}, tc.args...)...)
			var res map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stderr)
			got := normalize(res, srv.URL)
			golden := filepath.Join("testdata", "examples", tc.name+".json")
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run with -update to create the golden file")
			require.Equal(t, string(want), string(got), "result of %s differs from %s (run go test ./internal/cli -run TestExampleGoldens -update to accept)", tc.name, golden)
		})
	}
}

// normalize keeps what a run must reproduce and drops what varies.
func normalize(res map[string]any, serverURL string) []byte {
	type step struct {
		Node      string `json:"node"`
		Status    string `json:"status"`
		Iteration any    `json:"iteration"`
		Attempts  any    `json:"attempts"`
		Output    any    `json:"output,omitempty"`
		Error     any    `json:"error,omitempty"`
	}
	var steps []step
	for _, s := range res["steps"].([]any) {
		m := s.(map[string]any)
		out := m["output"]
		if o, ok := out.(map[string]any); ok {
			delete(o, "execution_id")
			if h, ok := o["headers"].(map[string]any); ok {
				delete(h, "date")
			}
		}
		var errv any
		if e, ok := m["error"].(map[string]any); ok {
			errv = map[string]any{"category": e["category"], "code": e["code"]}
		}
		steps = append(steps, step{Node: m["node"].(string), Status: m["status"].(string), Iteration: m["iteration"], Attempts: m["attempts"], Output: out, Error: errv})
	}
	key := func(s step) string {
		b, _ := json.Marshal(s)
		return fmt.Sprintf("%s/%06v/%s", s.Node, s.Iteration, b)
	}
	sort.SliceStable(steps, func(i, j int) bool { return key(steps[i]) < key(steps[j]) })
	var errv any
	if e, ok := res["error"].(map[string]any); ok {
		errv = map[string]any{"category": e["category"], "message": e["message"]}
	}
	doc := map[string]any{"status": res["status"], "outputs": res["outputs"], "error": errv, "steps": steps}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return []byte(strings.ReplaceAll(string(b), serverURL, "http://SERVER") + "\n")
}
