package repair

import (
	"regexp"
	"sort"
	"strings"
	"sync"
)

// normaliser rewrites what matches re.
type normaliser struct {
	re   *regexp.Regexp
	with string
}

// normalisers rewrite what changes from one occurrence of an error to the
// next, in order: times before the numbers in them, ids before paths. They
// are compiled on first use, by the repair loop only.
var normalisers = sync.OnceValue(func() []normaliser {
	return []normaliser{
		{regexp.MustCompile(`\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?`), "<time>"},
		{regexp.MustCompile(`\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b`), "<time>"},
		{regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<id>"},
		{regexp.MustCompile(`\b[A-Za-z0-9_-]*[0-9][A-Za-z0-9_-]*[A-Za-z][A-Za-z0-9_-]*\b`), "<id>"},
		{regexp.MustCompile(`(?:[A-Za-z]:)?(?:[/\\][^\s/\\'"?#:,;()\[\]{}<>]+){2,}[/\\]?`), "<path>"},
		{regexp.MustCompile(`\d+(?:\.\d+)*`), "#"},
		{regexp.MustCompile(`\s+`), " "},
	}
})

// Normalize removes from an error message what differs between two
// occurrences of the same error: times, ids (UUIDs and tokens with a digit
// before a letter, such as run ids and hashes), file and URL paths of two
// or more segments, and numbers. Normalize is idempotent.
func Normalize(msg string) string {
	s := msg
	for _, n := range normalisers() {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return strings.TrimSpace(s)
}

// Signature identifies a set of problems regardless of their order and of
// what Normalize removes from the messages: two attempts that end with the
// same signature failed the same way. Node, category and code are kept as
// they are, so an HTTP 400 that becomes a 422 is a new error.
func Signature(problems []Problem) string {
	parts := make([]string, 0, len(problems))
	for _, p := range problems {
		// A command's stderr and stdout are part of how it failed: "exit
		// status 1" is the message of every failed command.
		parts = append(parts, strings.Join([]string{p.Node, p.Category, p.Code, Normalize(p.Message), Normalize(p.Stderr), Normalize(p.Stdout)}, "|"))
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}
