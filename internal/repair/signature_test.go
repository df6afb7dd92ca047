package repair_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/repair"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"numbers", "GET http://127.0.0.1:43361/api answered 400 Bad Request", "GET http://#:#/api answered # Bad Request"},
		{"timestamps", "expired at 2026-11-22T03:32:14.123Z, retry after 03:40:00", "expired at <time>, retry after <time>"},
		{"a date", "no data for 2024-01-31", "no data for <time>"},
		{"uuids", "order 550e8400-e29b-41d4-a716-446655440000 not found", "order <id> not found"},
		{"run ids and hashes", "run 4366abf92482 step a1b2c3 failed", "run <id> step <id> failed"},
		{"paths", "open /tmp/TestX123/001/flow.yaml: no such file", "open <path>: no such file"},
		{"windows paths", `open C:\Users\ada\flow.yaml failed`, "open <path> failed"},
		{"words stay", "unknown region eu-west; did you mean bad?", "unknown region eu-west; did you mean bad?"},
		{"space", "  a\n\tb  ", "a b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, repair.Normalize(tc.in))
		})
	}
}

func TestSignature(t *testing.T) {
	t.Parallel()
	p := func(node, code, msg string) repair.Problem {
		return repair.Problem{Node: node, Category: "http_status", Code: code, Message: msg}
	}
	a := []repair.Problem{p("call", "http_400", "GET http://127.0.0.1:5001/api answered 400 after 12ms"), p("other", "http_400", "x")}
	b := []repair.Problem{p("other", "http_400", "x"), p("call", "http_400", "GET http://127.0.0.1:6002/api answered 400 after 30ms")}
	require.Equal(t, repair.Signature(a), repair.Signature(b), "order, ports and times do not count")

	c := []repair.Problem{p("call", "http_422", "GET http://127.0.0.1:5001/api answered 422 after 12ms"), p("other", "http_400", "x")}
	require.NotEqual(t, repair.Signature(a), repair.Signature(c), "another status is another error")

	d := []repair.Problem{p("call2", "http_400", "GET http://127.0.0.1:5001/api answered 400 after 12ms"), p("other", "http_400", "x")}
	require.NotEqual(t, repair.Signature(a), repair.Signature(d), "another node is another error")
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"GET http://127.0.0.1:43361/api answered 400", "2026-11-22T03:32:14Z", "/a1b/cd/ef", "C:\\x\\y",
		"550e8400-e29b-41d4-a716-446655440000", "run 4366abf92482", "1.2.3", "<id>#<path>", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := repair.Normalize(s)
		if twice := repair.Normalize(once); twice != once {
			t.Fatalf("Normalize is not idempotent:\n in:    %q\n once:  %q\n twice: %q", s, once, twice)
		}
	})
}

func ExampleNormalize() {
	fmt.Println(repair.Normalize("run 4366abf92482: GET http://127.0.0.1:43361/api answered 400 at 2026-11-22T03:32:14Z"))
	// Output: run <id>: GET http://#:#/api answered # at <time>
}
