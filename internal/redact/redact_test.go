package redact_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/node"
)

const secret = "s3cr3t/t0ken+value?!"

func TestRedactorMasksEncodedForms(t *testing.T) {
	t.Parallel()
	r := redact.New(map[string]string{"TOKEN": secret, "PIN": "4242"})
	b := []byte(secret)
	b64 := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	tests := []struct{ name, text, want string }{
		{"plain", "Authorization: " + secret + "\n", "Authorization: ***\n"},
		{"base64", "x " + b64(base64.StdEncoding, secret) + " y", "x *** y"},
		{"base64 raw", "x " + b64(base64.RawStdEncoding, secret) + " y", "x *** y"},
		{"base64 url", "x " + b64(base64.URLEncoding, secret) + " y", "x *** y"},
		{"base64 url raw", "x " + b64(base64.RawURLEncoding, secret) + " y", "x *** y"},
		{"query escaped", "?k=" + url.QueryEscape(secret), "?k=***"},
		{"path escaped", "/p/" + url.PathEscape(secret), "/p/***"},
		{"query escaped lower case", "?k=" + strings.ToLower(url.QueryEscape(secret)), "?k=***"},
		{"hex", hex.EncodeToString(b), "***"},
		{"HEX", strings.ToUpper(hex.EncodeToString(b)), "***"},
		{"json escaped slash", `{"t": "s3cr3t\/t0ken+value?!"}`, `{"t": "***"}`},
		{"short secret as written", "pin 4242 hex 34323432", "pin *** hex 34323432"},
		{"nothing secret", "nothing secret", "nothing secret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, r.String(tc.text))
		})
	}
}

// TestRedactorMasksBase64InsideLongerText: a secret encoded with what
// surrounds it — a Basic authorization header, echo's newline — leaves
// none of the characters that depend on it alone.
func TestRedactorMasksBase64InsideLongerText(t *testing.T) {
	t.Parallel()
	r := redact.New(map[string]string{"TOKEN": secret})
	for _, prefix := range []string{"", "u", "us", "user:", "Bearer "} {
		for _, suffix := range []string{"", "\n", "x\n", ";rest of it"} {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
				text := enc.EncodeToString([]byte(prefix + secret + suffix))
				got := r.String(text)
				require.Contains(t, got, redact.Mask, "%q%s%q", prefix, "+secret+", suffix)
				// What is left is at most the 3 characters at each end
				// that mix the secret's bits with the text around it.
				left := strings.Replace(got, redact.Mask, "", 1)
				outside := len(enc.EncodeToString([]byte(prefix+suffix))) + 6
				require.LessOrEqual(t, len(left), outside, "%q → %q", text, got)
			}
		}
	}
}

func TestNilRedactor(t *testing.T) {
	t.Parallel()
	var r *redact.Redactor
	require.Nil(t, redact.New(nil))
	require.Nil(t, redact.New(map[string]string{"A": "ab"}), "a secret under MinLen masks nothing")
	m := map[string]any{"a": "b"}
	got, changed := r.Map(m)
	require.False(t, changed)
	require.Equal(t, m, got)
	e := &node.Error{Message: "m"}
	ge, changed := r.Error(e)
	require.False(t, changed)
	require.Same(t, e, ge)
	require.Equal(t, "x", r.Func()("x"))
}

func TestRedactorValue(t *testing.T) {
	t.Parallel()
	r := redact.New(map[string]string{"TOKEN": secret, "PIN": "90210417"})
	type custom struct {
		Name  string
		Value string
	}
	tests := []struct {
		name    string
		in      any
		want    any
		changed bool
	}{
		{"nothing", map[string]any{"a": []any{"b", 1, true, nil}}, map[string]any{"a": []any{"b", 1, true, nil}}, false},
		{"nested", map[string]any{"a": []any{"x " + secret, map[string]any{"k": secret}}, "n": 3},
			map[string]any{"a": []any{"x ***", map[string]any{"k": "***"}}, "n": 3}, true},
		{"key", map[string]any{secret: 1}, map[string]any{"***": 1}, true},
		{"number", map[string]any{"json": 90210417}, map[string]any{"json": "***"}, true},
		{"float", []any{90210417.0}, []any{"***"}, true},
		{"strings", []string{"a", secret}, []string{"a", "***"}, true},
		{"string map", map[string]string{"h": "Bearer " + secret}, map[string]string{"h": "Bearer ***"}, true},
		{"struct", []any{custom{"n", secret}}, []any{map[string]any{"Name": "n", "Value": "***"}}, true},
		{"struct without", []any{custom{"n", "v"}}, []any{custom{"n", "v"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before, err := json.Marshal(tc.in)
			require.NoError(t, err)
			got, changed := r.Value(tc.in)
			require.Equal(t, tc.changed, changed)
			require.Equal(t, tc.want, got)
			after, err := json.Marshal(tc.in)
			require.NoError(t, err)
			require.JSONEq(t, string(before), string(after), "the argument is not changed")
		})
	}
}

func TestRedactorError(t *testing.T) {
	t.Parallel()
	r := redact.New(map[string]string{"TOKEN": secret})
	e := &node.Error{Code: "http_status", Category: "client", Message: "401 for " + secret,
		Details: map[string]any{"body": map[string]any{"error": "bad token " + secret}, "status": 401}}
	got, changed := r.Error(e)
	require.True(t, changed)
	require.Equal(t, "401 for ***", got.Message)
	require.Equal(t, map[string]any{"body": map[string]any{"error": "bad token ***"}, "status": 401}, got.Details)
	require.Equal(t, "401 for "+secret, e.Message, "the argument is not changed")

	clean := &node.Error{Message: "fine", Details: map[string]any{"status": 500}}
	got, changed = r.Error(clean)
	require.False(t, changed)
	require.Same(t, clean, got)
}

func BenchmarkRedactorMap(b *testing.B) {
	r := redact.New(map[string]string{"TOKEN": secret, "OTHER": "another-secret-value"})
	rec := map[string]any{"values": map[string]any{"i": 5, "name": "node n42"}, "stdout": "a line of ordinary output\n", "exit_code": 0}
	b.ReportAllocs()
	for b.Loop() {
		r.Map(rec)
	}
}

func BenchmarkRedactorLargeString(b *testing.B) {
	r := redact.New(map[string]string{"TOKEN": secret})
	s := strings.Repeat("ordinary output with some words, numbers 12345 and symbols /+=\n", 1<<14) // 1 MiB
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		r.String(s)
	}
}

func TestRedactorJSON(t *testing.T) {
	t.Parallel()
	r := redact.New(map[string]string{"TOKEN": secret})
	clean := []byte(`{"a": 1}` + "\n")
	got, err := r.JSON(clean, "  ")
	require.NoError(t, err)
	require.Equal(t, string(clean), string(got), "nothing to mask: the bytes as they were")

	in, err := json.Marshal(map[string]any{"z": secret, "n": 12345678901234567, "list": []any{"x " + secret}})
	require.NoError(t, err)
	got, err = r.JSON(append(in, '\n'), "  ")
	require.NoError(t, err)
	require.Equal(t, "{\n  \"list\": [\n    \"x ***\"\n  ],\n  \"n\": 12345678901234567,\n  \"z\": \"***\"\n}\n", string(got))
	got, err = r.JSON(in, "")
	require.NoError(t, err)
	require.Equal(t, `{"list":["x ***"],"n":12345678901234567,"z":"***"}`, string(got))
}

func TestInto(t *testing.T) {
	t.Parallel()
	type rec struct {
		Status string         `json:"status"`
		Notes  []string       `json:"notes"`
		Data   map[string]any `json:"data"`
		Skip   string         `json:"-"`
	}
	r := redact.New(map[string]string{"TOKEN": secret})
	v := &rec{Status: "ok", Notes: []string{"saw " + secret}, Data: map[string]any{"k": secret}, Skip: "kept out"}
	got, err := redact.Into(r, v)
	require.NoError(t, err)
	require.Equal(t, &rec{Status: "ok", Notes: []string{"saw ***"}, Data: map[string]any{"k": "***"}}, got)
	require.Equal(t, "saw "+secret, v.Notes[0], "the argument is not changed")

	clean := &rec{Status: "ok"}
	got, err = redact.Into(r, clean)
	require.NoError(t, err)
	require.Same(t, clean, got)
	got, err = redact.Into[*rec](nil, v)
	require.NoError(t, err)
	require.Same(t, v, got)
}

// A big value kept in a blob file is not looked into: its file holds no
// secret (package blob refuses to write one) and its reference is
// Skein's, even when a short secret happens to be in its digest or path.
func TestBlobsAreLeftAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := blob.NewStore(dir, nil)
	require.NoError(t, err)
	v, err := st.Put(strings.Repeat("a big value ", 10_000))
	require.NoError(t, err)
	b := v.(*blob.Blob)
	red := redact.New(map[string]string{"T": b.Digest()[10:30]})
	out, masked := red.Map(map[string]any{"stdout": b})
	require.False(t, masked)
	require.Same(t, b, out["stdout"])
}
