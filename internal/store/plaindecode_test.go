package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// What decodePlainObject takes it decodes as encoding/json's Decoder with
// UseNumber does; what it declines encoding/json decodes (or refuses).
func TestPlainObjectIsEncodingJSONs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text  string
		takes bool
	}{
		{`{}`, true},
		{`null`, true},
		{` { "a" : [ 1 , -0 , 2.5e-3 , 1E+2 , true , false , null , {} , [ ] ] } `, true},
		{`{"text":"héllo ☃ wörld","n":9007199254740993,"f":1e400,"z":0}`, true},
		{`{"a":1,"a":{"b":2}}`, true},
		{`{"nested":{"x":[{"y":[[[]]]}]}}`, true},
		{`{"esc":"a\"b"}`, false},
		{`{"esc":"\u00e9"}`, false},
		{"{\"bad\":\"\xff\"}", false},
		{"{\"ctl\":\"a\tb\"}", false},
		{`[1]`, false},
		{`"s"`, false},
		{`{"a":01}`, false},
		{`{"a":1.}`, false},
		{`{"a":-}`, false},
		{`{"a":1,}`, false},
		{`{"a" 1}`, false},
		{`{"a":1} {}`, false},
		{`{"a":tru}`, false},
		{`{`, false},
		{``, false},
	} {
		got, ok := decodePlainObject([]byte(tc.text))
		require.Equal(t, tc.takes, ok, "%q", tc.text)
		if ok {
			var want map[string]any
			require.NoError(t, decode([]byte(tc.text), &want), "%q", tc.text)
			require.Equal(t, want, got, "%q", tc.text)
		}
	}
}

// FuzzPlainObject: on any text, decodePlainObject declines or gives what
// encoding/json gives, and encoding/json accepts that text.
func FuzzPlainObject(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"a":[1,-0.5e3,true,null,{"b":"é"}]}`, `{"a":"\n"}`, `{"a":01}`, `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := decodePlainObject(data)
		if !ok {
			return
		}
		var want map[string]any
		require.NoError(t, decode(data, &want), "%q was taken; encoding/json refuses it", data)
		require.Equal(t, want, got, "%q", data)
	})
}
