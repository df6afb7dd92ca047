package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/node"
)

// Mask is what a secret is replaced with.
const Mask = "***"

const (
	// MinLen is the shortest secret that is masked at all: a value of one
	// or two bytes would mask most text it appears in.
	MinLen = 3
	// MinEncodedLen is the shortest secret whose encoded forms are masked
	// too: the hex or base64 of a shorter one is short enough to occur in
	// unrelated text.
	MinEncodedLen = 6
)

// Redactor replaces the values of a run's secrets with Mask, and the forms
// a program prints them in when it encodes them on its own (see New). A
// nil *Redactor has nothing to mask: every method returns its argument as
// it is, without copying it.
//
// The methods never change their argument: a value that holds a secret is
// copied, with the secret masked in the copy; a value that holds none is
// returned as it is, so a record that went through a Redactor once goes
// through it again without an allocation.
type Redactor struct {
	forms    []string // longest first
	replacer *strings.Replacer
	shortest int
	// short are the forms under 4 bytes, looked for one by one. The
	// others are found in one pass: heads holds, per hash of a form's
	// first 4 bytes, one bit; a window of text whose bit is set is checked
	// against byHead, the forms that begin with those 4 bytes.
	short  []string
	heads  []uint64
	byHead map[uint32][]string
}

// headBits is the size of the heads table, in bits of hash: 2^16 bits,
// 8 KiB, sparse enough that text with no secret rarely hits a set bit.
const headBits = 16

func headHash(w uint32) uint32 { return (w * 2654435761) >> (32 - headBits) }

// New returns the Redactor of a run's secrets (name → value), or nil when
// none is long enough to mask (MinLen).
//
// Besides each value as it is, it masks the forms a program prints it in
// when it encodes it on its own, for values of MinEncodedLen bytes or more:
//   - base64, standard and URL alphabets, with and without padding, alone
//     or inside a longer encoded text at any of the three byte alignments
//     (echo "$TOKEN" | base64, a Basic authorization header): the
//     characters that depend on the secret's bytes alone are masked;
//   - URL-encoded, as Go, JavaScript's encodeURIComponent and RFC 3986
//     escaping write it (space as + or %20, hex digits upper or lower case);
//   - hex, lower and upper case;
//   - the inside of a JSON string, where escaping changes it (a quote, a
//     backslash, <, >, &, control characters, or / written as \/).
func New(secrets map[string]string) *Redactor {
	seen := map[string]bool{}
	var forms []string
	add := func(v string) {
		if len(v) >= MinLen && !seen[v] {
			seen[v] = true
			forms = append(forms, v)
		}
	}
	// Sorted, so that the forms (and the order of equal lengths) do not
	// depend on map order.
	values := make([]string, 0, len(secrets))
	for _, v := range secrets {
		values = append(values, v)
	}
	slices.Sort(values)
	for _, v := range values {
		add(v)
		if len(v) < MinEncodedLen {
			continue
		}
		for _, f := range encodedForms(v) {
			add(f)
		}
	}
	if len(forms) == 0 {
		return nil
	}
	// Longest first: where two forms start at the same place (a whole
	// base64 text and the core of it), the longer one is masked.
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Mask)
	}
	r := &Redactor{forms: forms, replacer: strings.NewReplacer(pairs...), shortest: len(forms[len(forms)-1]),
		heads: make([]uint64, (1<<headBits)/64), byHead: map[uint32][]string{}}
	for _, f := range forms {
		if len(f) < 4 {
			r.short = append(r.short, f)
			continue
		}
		w := uint32(f[0])<<24 | uint32(f[1])<<16 | uint32(f[2])<<8 | uint32(f[3])
		h := headHash(w)
		r.heads[h/64] |= 1 << (h % 64)
		r.byHead[w] = append(r.byHead[w], f)
	}
	return r
}

// encodedForms are the encodings of a secret that New masks too.
func encodedForms(v string) []string {
	b := []byte(v)
	out := []string{
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for k := range 3 {
			out = append(out, base64Core(enc, b, k))
		}
	}
	for _, e := range []string{
		url.QueryEscape(v), url.PathEscape(v),
		escapeURL(v, "-_.~", "%20"),                 // RFC 3986
		escapeURL(v, "-_.~", "+"),                   // form encoding
		escapeURL(v, "-_.~/", "%20"),                // Python's quote
		escapeURL(v, "-_.~!'()*", "%20"),            // encodeURIComponent
		escapeURL(v, "-_.~!'()*#$&+,/:;=?@", "%20"), // encodeURI
	} {
		out = append(out, e, lowerEscapes(e))
	}
	for _, html := range []bool{true, false} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(html)
		if enc.Encode(v) == nil {
			s := strings.TrimSuffix(buf.String(), "\n")
			s = s[1 : len(s)-1] // the quotes
			out = append(out, s, strings.ReplaceAll(s, "/", `\/`))
		}
	}
	return out
}

// base64Core returns the characters of b's encoding that depend on b's
// bytes alone when b starts k bytes into a group of three: what is the
// same wherever b sits, at that alignment, inside a longer encoded text.
func base64Core(enc *base64.Encoding, b []byte, k int) string {
	padded := make([]byte, k+len(b)+2)
	copy(padded[k:], b)
	s := enc.EncodeToString(padded)
	// Character j holds bits [6j, 6j+6) of the input; b's bits are
	// [8k, 8(k+len(b))).
	first := (8*k + 5) / 6
	last := 8*(k+len(b))/6 - 1
	if last < first {
		return ""
	}
	return s[first : last+1]
}

// escapeURL percent-encodes every byte of s but ASCII letters, digits and
// the bytes in keep, writing a space as space.
func escapeURL(s, keep, space string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte(keep, c) >= 0:
			b.WriteByte(c)
		case c == ' ':
			b.WriteString(space)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

// lowerEscapes writes the hex digits of s's %XX escapes in lower case.
func lowerEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1] = lowerHex(b[i+1])
			b[i+2] = lowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if 'A' <= c && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// Func returns String as a function, for what takes one (node.Call.Redact).
// It is never nil.
func (r *Redactor) Func() func(string) string {
	if r == nil {
		return func(s string) string { return s }
	}
	return r.String
}

// Contains reports whether s holds a secret, in any of the masked forms.
func (r *Redactor) Contains(s string) bool {
	if r == nil || len(s) < r.shortest {
		return false
	}
	return contains(r, s)
}

// ContainsBytes reports whether b holds a secret, in any of the masked
// forms: what a writer checks its encoded bytes with.
func (r *Redactor) ContainsBytes(b []byte) bool {
	if r == nil || len(b) < r.shortest {
		return false
	}
	return contains(r, b)
}

// contains looks for every form in one pass over s (strings.Contains per
// form took ~50 passes, 60 MB/s for two secrets).
func contains[T string | []byte](r *Redactor, s T) bool {
	for _, f := range r.short {
		if strings.Contains(string(s), f) {
			return true
		}
	}
	if len(s) < 4 {
		return false
	}
	w := uint32(s[0])<<16 | uint32(s[1])<<8 | uint32(s[2])
	for i := 3; i < len(s); i++ {
		w = w<<8 | uint32(s[i])
		h := headHash(w)
		if r.heads[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		rest := s[i-3:]
		for _, f := range r.byHead[w] {
			if len(rest) >= len(f) && string(rest[:len(f)]) == f {
				return true
			}
		}
	}
	return false
}

// String returns s with every secret masked.
func (r *Redactor) String(s string) string {
	if !r.Contains(s) {
		return s
	}
	return r.replacer.Replace(s)
}

// Map returns m with every secret masked (see Value), and whether there
// was one.
func (r *Redactor) Map(m map[string]any) (map[string]any, bool) {
	if r == nil || m == nil || !r.holds(m) {
		return m, false
	}
	out, _ := r.copyValue(m).(map[string]any)
	return out, true
}

// Value returns v with every secret masked in the strings it holds, map
// keys included, and whether there was one. Maps and lists of any type are
// looked into; a number whose decimal text holds a secret becomes the
// string Mask. Other values are looked at as their JSON encoding, the way
// they would be recorded, and replaced by its decoded, masked form when it
// holds a secret.
func (r *Redactor) Value(v any) (any, bool) {
	if r == nil || !r.holds(v) {
		return v, false
	}
	return r.copyValue(v), true
}

// Into returns v with every secret masked, for a record of any type: v
// itself when its JSON encoding holds none, else v encoded, masked as a
// JSON value (every string in it) and decoded again into a new T. Fields
// that JSON leaves out (`json:"-"`, unexported) are lost in the copy.
func Into[T any](r *Redactor, v T) (T, error) {
	if r == nil {
		return v, nil
	}
	data, err := json.Marshal(v)
	if err != nil || !r.ContainsBytes(data) {
		return v, err
	}
	var out T
	data, err = r.JSON(data, "")
	if err == nil {
		err = json.Unmarshal(data, &out)
	}
	return out, err
}

// JSON returns the JSON text data (one value) with every secret masked in
// the strings it holds, keys included: data itself when it holds none.
// A masked result is indented with indent ("" for compact) and ends in a
// newline when data did; numbers keep their digits, object keys are
// sorted.
func (r *Redactor) JSON(data []byte, indent string) ([]byte, error) {
	if !r.ContainsBytes(data) {
		return data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(r.copyValue(g)); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	if !bytes.HasSuffix(data, []byte("\n")) {
		out = bytes.TrimSuffix(out, []byte("\n"))
	}
	return out, nil
}

// Error returns e with its message and details masked, and whether there
// was a secret in them. A masked error is a copy; its wrapped error is
// dropped, since its text is the unmasked message.
func (r *Redactor) Error(e *node.Error) (*node.Error, bool) {
	if e == nil || r == nil {
		return e, false
	}
	inMessage := r.Contains(e.Message)
	details, inDetails := r.Map(e.Details)
	if !inMessage && !inDetails {
		return e, false
	}
	c := *e
	c.Message, c.Details, c.Err = r.String(e.Message), details, nil
	return &c, true
}

// holds reports whether v holds a secret.
func (r *Redactor) holds(v any) bool {
	switch x := v.(type) {
	case nil, bool:
		return false
	case *blob.Blob:
		// A big value in a file: never written with a secret in it, and
		// its reference (digest, size, path) is Skein's own.
		return false
	case string:
		return r.Contains(x)
	case map[string]any:
		for k, e := range x {
			if r.Contains(k) || r.holds(e) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range x {
			if r.holds(e) {
				return true
			}
		}
		return false
	case []string:
		for _, e := range x {
			if r.Contains(e) {
				return true
			}
		}
		return false
	case map[string]string:
		for k, e := range x {
			if r.Contains(k) || r.Contains(e) {
				return true
			}
		}
		return false
	case int:
		// A number of fewer than MinLen characters holds no secret.
		return (x >= 100 || x <= -10) && r.Contains(strconv.Itoa(x))
	case int64:
		return (x >= 100 || x <= -10) && r.Contains(strconv.FormatInt(x, 10))
	case float64:
		return r.Contains(strconv.FormatFloat(x, 'f', -1, 64))
	case json.Number:
		return r.Contains(string(x))
	}
	data, err := json.Marshal(v)
	return err == nil && r.Contains(string(data))
}

// copyValue returns a copy of v with every secret masked, copying only
// the parts that hold one.
func (r *Redactor) copyValue(v any) any {
	if !r.holds(v) {
		return v
	}
	switch x := v.(type) {
	case string:
		return r.replacer.Replace(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[r.String(k)] = r.copyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.copyValue(e)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = r.String(e)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[r.String(k)] = r.String(e)
		}
		return out
	case int, int64, float64, json.Number:
		return Mask
	}
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var g any
	if dec.Decode(&g) != nil {
		return v
	}
	return r.copyValue(plain(g))
}

// plain turns the json.Numbers of a decoded value into int or float64.
func plain(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.Atoi(string(x)); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = plain(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plain(e)
		}
	}
	return v
}
