package reqbody

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// roundTrips checks what a run would keep of a value taken from a body:
// it encodes as JSON, that JSON is valid UTF-8, and decoding it as a body
// gives the value again.
func roundTrips(t *testing.T, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err, "a value taken from a body encodes")
	require.True(t, utf8.Valid(data), "a value taken from a body is UTF-8: %q", data)
	var back any
	require.NoError(t, DecodeJSON(data, &back, false))
	back, err = Numbers(back, true)
	require.NoError(t, err)
	again, err := json.Marshal(back)
	require.NoError(t, err)
	require.Equal(t, string(data), string(again), "the value round-trips")
}

// refused checks a body's refusal: a 4xx problem of a body's codes.
func refused(t *testing.T, err error) {
	t.Helper()
	var p *Refusal
	require.True(t, errors.As(err, &p), "a refusal is a Refusal, not %v", err)
	require.Contains(t, []string{CodeInvalidBody, CodeBadRequest, CodeUnsupportedMediaType}, p.Code, p.Detail)
	require.Less(t, p.Status, 500, p.Detail)
}

// FuzzWebhookBody: whatever a webhook is sent, parsing its body does not
// panic, and either refuses it (400 invalid_body or bad_request, 415) or
// gives a value a run keeps as valid UTF-8 JSON; a body that is not UTF-8
// is never taken.
func FuzzWebhookBody(f *testing.F) {
	for _, seed := range []struct{ ct, body string }{
		{"application/json", `{"who": "Ada", "n": 3, "items": [1, 2.5]}`},
		{"application/json", "{\"who\": \"\xff\"}"},
		{"application/json", `{"n": 1e400}`},
		{"application/json", `"\udc80"`},
		{"application/json", `{} ]`},
		{"application/cloudevents+json", `[null, true, -0, 1e-400]`},
		{"application/x-www-form-urlencoded", "a=1&a=2&b=%FF"},
		{"text/plain; charset=utf-8", "hello \xc3\x28"},
		{"text/plain", "héllo"},
		{"application/octet-stream", "x"},
		{"", "x"},
	} {
		f.Add(seed.ct, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, contentType string, raw []byte) {
		v, err := Parse(contentType, raw)
		if err != nil {
			refused(t, err)
			return
		}
		require.True(t, len(raw) == 0 || utf8.Valid(raw), "a body that is not UTF-8 was taken: %q", raw)
		roundTrips(t, v)
	})
}

// startBody is the body of POST /api/workflows/{name}/runs, as the
// server's StartBody declares it.
type startBody struct {
	Inputs  map[string]any `json:"inputs"`
	Trigger string         `json:"trigger"`
}

// FuzzRunInputs: whatever the body of POST /api/workflows/{name}/runs,
// decoding it and its inputs does not panic, and either refuses it or
// gives inputs a run keeps as valid UTF-8 JSON.
func FuzzRunInputs(f *testing.F) {
	for _, seed := range []string{
		`{"inputs": {"who": "Ada", "days": 3}}`,
		"{\"inputs\": {\"who\": \"\xed\xa0\x80\"}}",
		`{"inputs": {"n": -1e999}}`,
		`{"inputs": {"deep": [[[{"a": 1.5}]]]}, "trigger": "t"}`,
		`{"inputs": 3}`,
		`{"other": 1}`,
		`{"inputs": {}} {}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var body startBody
		err := DecodeJSON(raw, &body, true)
		var inputs map[string]any
		if err == nil {
			inputs, err = Inputs(body.Inputs)
		}
		if err != nil {
			refused(t, err)
			return
		}
		require.True(t, utf8.Valid(raw), "a body that is not UTF-8 was taken: %q", raw)
		roundTrips(t, inputs)
	})
}

// TestBodiesThatAreNotWhatTheySay names what is refused, and how.
func TestBodiesThatAreNotWhatTheySay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ct, body string
		code, detail   string
	}{
		{"JSON not UTF-8", "application/json", "{\"who\": \"\xffx\"}", CodeInvalidBody, "byte 9 is 0xff"},
		{"JSON with a surrogate encoded in UTF-8", "application/json", "\"\xed\xa0\x80\"", CodeInvalidBody, "not valid UTF-8"},
		{"number beyond a float", "application/json", `{"n": 1e400}`, CodeInvalidBody, "1e400"},
		{"text not UTF-8", "text/plain", "caf\xe9", CodeInvalidBody, "the text is not valid UTF-8"},
		{"form not UTF-8 once decoded", "application/x-www-form-urlencoded", "name=caf%E9", CodeInvalidBody, `form field "name"`},
		{"JSON then garbage", "application/json", `{} ]`, CodeBadRequest, "more than one JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tc.ct, []byte(tc.body))
			var p *Refusal
			require.True(t, errors.As(err, &p), "refused with a Refusal: %v", err)
			require.Equal(t, tc.code, p.Code)
			require.Equal(t, http.StatusBadRequest, p.Status)
			require.Contains(t, p.Detail, tc.detail)
		})
	}
	v, err := Parse("application/json", []byte(`{"s": "\udc80", "n": 1e-400}`))
	require.NoError(t, err, "an escaped lone surrogate is valid JSON: it decodes to U+FFFD")
	require.Equal(t, map[string]any{"s": "\ufffd", "n": 0.0}, v)
}

// A body decoded into a request's fields that is of another JSON type, as
// a whole or in a field, is named in JSON's words, never the server's Go
// types.
func TestDecodeJSONNamesJSONTypes(t *testing.T) {
	t.Parallel()
	var body struct {
		Inputs  map[string]any `json:"inputs"`
		Trigger string         `json:"trigger"`
		Ops     []struct {
			Op string `json:"op"`
		} `json:"ops"`
		Pins []string `json:"pins"`
	}
	for raw, detail := range map[string]string{
		`[1]`:                  "the body must be an object, not array",
		`"run"`:                "the body must be an object, not string",
		`{"trigger": 5}`:       "field trigger must be a string, not number",
		`{"inputs": "x"}`:      "field inputs must be an object, not string",
		`{"pins": [1]}`:        "each item of field pins must be a string, not number",
		`{"pins": "a"}`:        "field pins must be a list, not string",
		`{"ops": [{"op": 5}]}`: "field ops.op must be a string, not number",
		// Valid JSON with a field the request does not take: the field and
		// the ones it takes, not "not valid JSON".
		`{"inputs": {}, "wait": true}`:          `the body has a field "wait" that this request does not take; it takes inputs, trigger, ops and pins`,
		`{"ops": [{"op": "add", "node": "a"}]}`: `the body has a field "node" that this request does not take`,
		`{"inputs": {"x": 1}`:                   "the body is not valid JSON: unexpected EOF",
		`{"inputs": x}`:                         "the body is not valid JSON: invalid character 'x' looking for beginning of value (at byte 12)",
	} {
		err := DecodeJSON([]byte(raw), &body, true)
		var p *Refusal
		require.True(t, errors.As(err, &p), "%s refused with a Refusal: %v", raw, err)
		require.Equal(t, CodeBadRequest, p.Code, raw)
		require.Equal(t, detail, p.Detail, raw)
	}
}

// TestFieldsOfNamesWhatARequestTakes: the list an unknown field's refusal
// gives, for one field, none, a field without a tag and one left out.
func TestFieldsOfNamesWhatARequestTakes(t *testing.T) {
	t.Parallel()
	var one struct {
		Data any `json:"data,omitempty"`
	}
	var none struct{}
	var mixed struct {
		Reason  string
		Skipped string `json:"-"`
		hidden  string
		Pins    []string `json:"pins"`
	}
	_ = mixed.hidden
	require.Equal(t, "; it takes data", fieldsOf(&one))
	require.Equal(t, "; it takes no fields", fieldsOf(&none))
	require.Equal(t, "; it takes Reason and pins", fieldsOf(&mixed))
	require.Empty(t, fieldsOf(new(map[string]any)))
}
