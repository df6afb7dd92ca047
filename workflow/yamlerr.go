package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// YAMLError is where a yaml/v3 error decoding src is and what it says, as
// a workflow file's own are told (yamlError): for the other YAML files a
// command reads, such as .skein.yaml and test files.
func YAMLError(src []byte, err error) (Pos, string) {
	pe := yamlError(src, err)
	return pe.pos, pe.msg
}

// yamlError turns a yaml/v3 error ("yaml: line 11: did not find expected
// ',' or '}'") into a positioned message that says what to do. The
// library reports a line but no column, so the message points at the
// line's first character that is not white space. For a parser error the
// line it reports is where the enclosing block starts, not where the
// mistake is: problemLine finds the line that breaks the file.
func yamlError(src []byte, err error) *parseError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if name, ok := strings.CutPrefix(msg, "unknown anchor '"); ok {
		name = strings.TrimSuffix(name, "' referenced")
		pos := Pos{1, 1}
		if i := bytes.Index(src, []byte("*"+name)); i >= 0 {
			pos = posOf(src, i)
		}
		return &parseError{pos, fmt.Sprintf("YAML: alias *%s names no anchor defined before it", name)}
	}
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, after, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil {
				line, msg = n, after
			}
		}
	}
	block := 0
	if parserProblems[msg] {
		// yaml/v3 numbers the lines of parser (not scanner) errors from 0,
		// and names the line its block starts on, but for a block that
		// starts on the first line, where it names the line it stopped
		// on (or none).
		if line > 0 {
			block = line + 1
		}
		line = problemLine(src, err.Error(), max(block, 1))
		if block >= line {
			block = 0 // the line the library names is where it stopped
		}
	}
	if line == 0 {
		line = 1
	}
	col := firstCol(src, line)
	if msg == "found character that cannot start any token" && col > 1 && lineHasTabIndent(src, line) {
		return &parseError{Pos{line, 1}, tabIndented}
	}
	if msg == "found a tab character that violates indentation" {
		// The library names the line before the one the tab is on.
		for l := line; l <= line+1; l++ {
			if lineHasTabIndent(src, l) {
				return &parseError{Pos{l, 1}, tabIndented}
			}
		}
	}
	return &parseError{Pos{line, col}, "YAML: " + explainYAML(src, line, block, msg)}
}

const tabIndented = "YAML: this line is indented with a tab; YAML indents with spaces only"

// parserProblems are the messages of yaml/v3's parser errors, whose line
// the library reports counted from 0 (scanner errors count from 1).
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found duplicate %TAG directive":         true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// problemLine returns the first line, from line from on, whose end makes
// src's beginning fail as all of src fails (the same error, whole): the
// line that breaks the file. The beginnings that end before it parse, or
// fail otherwise (cut inside a value), so a search finds it: down from
// where the scanner stood when the parser gave up (scannedTo), by steps
// that double, then a binary search. It parses src's beginning a few
// times, only for a file that fails.
func problemLine(src []byte, whole string, from int) int {
	starts := lineStarts(src)
	fails := func(k int) bool {
		end := len(src)
		if k < len(starts) {
			end = starts[k]
		}
		return decodeAll(src[:end]) == whole
	}
	hi := len(starts)
	if at := scannedTo(src); at < len(src) {
		if k := posOf(src, at).Line; k >= from && k < hi && fails(k) {
			hi = k
		}
	}
	lo := from
	for step := 1; hi-step >= from; step *= 2 {
		if !fails(hi - step) {
			lo = hi - step + 1
			break
		}
		hi -= step
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	// The end of the file is what failed: name its last line with text.
	for lo > 1 && len(bytes.TrimSpace(lineText(src, starts, lo))) == 0 {
		lo--
	}
	return lo
}

// scannedTo returns how far into src a decoder that reads one byte at a
// time got before it failed: where its scanner stood when the parser gave
// up, at or just after the mistake.
func scannedTo(src []byte) int {
	r := &byteReader{src: src}
	dec := yaml.NewDecoder(r)
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return r.off
		}
	}
}

// byteReader reads src one byte at a time.
type byteReader struct {
	src []byte
	off int
}

func (r *byteReader) Read(p []byte) (int, error) {
	if r.off >= len(r.src) {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = r.src[r.off]
	r.off++
	return 1, nil
}

// decodeAll decodes every document of src and returns the first error's
// text, "" when there is none.
func decodeAll(src []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return ""
			}
			return err.Error()
		}
	}
}

// lineText is line's text (from 1) without its line break; nil past the
// end.
func lineText(src []byte, starts []int, line int) []byte {
	if line < 1 || line > len(starts) {
		return nil
	}
	end := len(src)
	if line < len(starts) {
		end = starts[line]
	}
	return bytes.TrimRight(src[starts[line-1]:end], "\r\n")
}

// explainYAML says what the library's message msg about line means and
// what to do; block is the line the enclosing block starts on (0 when
// the library did not say). A message it has no better words for is
// kept.
func explainYAML(src []byte, line, block int, msg string) string {
	starts := lineStarts(src)
	text := string(lineText(src, starts, line))
	if hint, ok := templateHint(text); ok && msg != "found unexpected end of stream" {
		return hint
	}
	switch msg {
	case "did not find expected key", "did not find expected '-' indicator":
		if hint, ok := indentHint(src, starts, line); ok {
			return hint
		}
		if q, ok := quotedThenText(text); ok {
			return fmt.Sprintf("the quoted text %s is followed by more text on its line: quote the whole value", q)
		}
		rest := strings.TrimLeft(text, " ")
		if msg == "did not find expected key" && (rest == "-" || strings.HasPrefix(rest, "- ")) {
			return fmt.Sprintf("a list item (- …) where %s expects a key: put the list under a key of its own, indented below it", startsOn("the map", block, " above it"))
		}
		if msg == "did not find expected '-' indicator" {
			return fmt.Sprintf("this line is not an item (- …) of %s, yet it is indented as one: start it with \"- \", or indent it as the keys of the item above it", startsOn("the list", block, " above it"))
		}
		return fmt.Sprintf("this line is not a key (name: value) of %s: make it one, or indent it as the lines it belongs with", startsOn("the map", block, " above it"))
	case "did not find expected ',' or '}'":
		return fmt.Sprintf("%s is not closed: end it with }, and put a comma between its entries", startsOn("a map written { … }", block, ""))
	case "did not find expected ',' or ']'":
		return fmt.Sprintf("%s is not closed: end it with ], and put a comma between its items", startsOn("a list written [ … ]", block, ""))
	case "mapping values are not allowed in this context":
		if hint, ok := overIndented(src, starts, line); ok {
			return hint
		}
		if fix, ok := quotedLine(text); ok {
			return "a value holds \": \" and is not quoted, so YAML reads a second key in it: quote the value, " + fix
		}
		return "a value holds \": \" and is not quoted, so YAML reads a second key in it: quote the value"
	case "block sequence entries are not allowed in this context":
		return "a list item (- …) on its key's line: start the list on the next line, indented, or write it [a, b]"
	case "found character that cannot start any token":
		if c, ok := reservedStart(text); ok {
			fix, _ := quotedLine(text)
			return strings.TrimSuffix(fmt.Sprintf("a value may not start with %s in YAML: quote it, %s", c, fix), ", ")
		}
	case "found unexpected end of stream":
		if strings.ContainsAny(text, `"'`) {
			return "a quoted value on this line is never closed: end it with the quote it starts with"
		}
	}
	return msg
}

// templateHint is the message for a line whose value starts with {{ and
// is not quoted: YAML reads { as the start of a map.
func templateHint(text string) (string, bool) {
	i := strings.Index(text, "{{")
	if i < 0 {
		return "", false
	}
	before := strings.TrimRight(text[:i], " ")
	if !strings.HasSuffix(before, ":") && !strings.HasSuffix(before, "-") {
		return "", false
	}
	msg := "a value that starts with {{ is read by YAML as a map: quote it"
	if fix, ok := quotedLine(text); ok {
		msg += ", " + fix
	}
	return msg, true
}

// quotedLine is line written with its value quoted ("key: value" →
// `key: "value"`, "- value" → `- "value"`), when the line has that shape.
func quotedLine(text string) (string, bool) {
	indent := len(text) - len(strings.TrimLeft(text, " "))
	rest := text[indent:]
	var head, value string
	switch {
	case strings.HasPrefix(rest, "- "):
		head, value = "- ", rest[2:]
	default:
		k, v, ok := strings.Cut(rest, ": ")
		if !ok || strings.ContainsAny(k, `{}[]"'#`) {
			return "", false
		}
		head, value = k+": ", v
	}
	value = strings.TrimSpace(value)
	if value == "" || strings.Contains(value, " #") {
		return "", false
	}
	return head + strconv.Quote(value), true
}

// quotedThenText returns the quoted text a line's value starts with when
// more text follows it ("x" y).
func quotedThenText(text string) (string, bool) {
	_, value, ok := strings.Cut(strings.TrimLeft(text, " -"), ": ")
	if !ok {
		value = strings.TrimLeft(text, " -")
	}
	value = strings.TrimSpace(value)
	if len(value) < 2 || value[0] != '"' && value[0] != '\'' {
		return "", false
	}
	end := strings.IndexByte(value[1:], value[0])
	if end < 0 || strings.TrimSpace(value[end+2:]) == "" || strings.HasPrefix(strings.TrimSpace(value[end+2:]), "#") {
		return "", false
	}
	return value[:end+2], true
}

// reservedStart is the character a line's value starts with when YAML
// reserves it (@ and `).
func reservedStart(text string) (string, bool) {
	rest := strings.TrimLeft(text, " ")
	if r, ok := strings.CutPrefix(rest, "- "); ok {
		rest = r
	} else if _, v, ok := strings.Cut(rest, ": "); ok {
		rest = v
	}
	rest = strings.TrimLeft(rest, " ")
	if rest != "" && (rest[0] == '@' || rest[0] == '`') {
		return rest[:1], true
	}
	return "", false
}

// indentHint is the message for a line indented as no block above it is:
// the indentations it could have are those of the lines that enclose the
// line above it (a list item's "- " counting as indentation for the keys
// after it).
func indentHint(src []byte, starts []int, line int) (string, bool) {
	text := lineText(src, starts, line)
	ind := len(text) - len(bytes.TrimLeft(text, " "))
	var fits []int
	limit := -1
	for l := line - 1; l >= 1 && limit != 0; l-- {
		t := lineText(src, starts, l)
		body := bytes.TrimLeft(t, " ")
		if len(body) == 0 || body[0] == '#' {
			continue
		}
		at := len(t) - len(body)
		if limit < 0 && ind > at && opensBlock(body) {
			return "", false // the first line of the block a key opens
		}
		if limit >= 0 && at >= limit {
			continue
		}
		limit = at
		fits = append(fits, at)
		for bytes.HasPrefix(body, []byte("- ")) {
			trimmed := bytes.TrimLeft(body[2:], " ")
			at += len(body) - len(trimmed)
			body = trimmed
			fits = append(fits, at)
		}
	}
	if len(fits) == 0 || slices.Contains(fits, ind) {
		return "", false
	}
	slices.Sort(fits)
	fits = slices.Compact(fits)
	spaces := "spaces"
	if ind == 1 {
		spaces = "space"
	}
	return fmt.Sprintf("this line is indented by %d %s, which lines it up with no block above it (those are indented by %s): indent it as the lines it belongs with", ind, spaces, orList(fits)), true
}

// opensBlock reports whether a line (without its indentation) ends
// where a block that goes on below it starts: "key:", "-", "key: |".
func opensBlock(body []byte) bool {
	if i := bytes.Index(body, []byte(" #")); i >= 0 {
		body = body[:i]
	}
	body = bytes.TrimRight(body, " ")
	if bytes.Equal(body, []byte("-")) || bytes.HasSuffix(body, []byte(":")) {
		return true
	}
	for _, s := range []string{"|", ">", "|-", ">-", "|+", ">+"} {
		if bytes.HasSuffix(body, []byte(": "+s)) || bytes.HasSuffix(body, []byte("- "+s)) {
			return true
		}
	}
	return false
}

// overIndented is the message for a line indented below a key that
// already has a value on its own line ("type: set" then, further in,
// "values: …").
func overIndented(src []byte, starts []int, line int) (string, bool) {
	text := lineText(src, starts, line)
	ind := len(text) - len(bytes.TrimLeft(text, " "))
	for l := line - 1; l >= 1; l-- {
		t := lineText(src, starts, l)
		body := bytes.TrimLeft(t, " ")
		if len(body) == 0 || body[0] == '#' {
			continue
		}
		at := len(t) - len(body)
		if bytes.HasPrefix(body, []byte("- ")) {
			at += 2
			body = body[2:]
		}
		_, value, ok := bytes.Cut(body, []byte(": "))
		value = bytes.TrimSpace(value)
		if !ok || ind <= at || len(value) == 0 || value[0] == '#' || value[0] == '|' || value[0] == '>' || value[0] == '&' {
			return "", false
		}
		return fmt.Sprintf("this line is indented further than line %d, whose key already has its value (%s): indent it as that line's key (%d spaces)", l, bytes.TrimSpace(t), at), true
	}
	return "", false
}

// startsOn names what and the line it starts on ("the map that starts
// on line 4"), or what and unknown when the line is not known.
func startsOn(what string, line int, unknown string) string {
	if line == 0 {
		return what + unknown
	}
	return fmt.Sprintf("%s that starts on line %d", what, line)
}

// orList writes 0, 2 or 4.
func orList(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
