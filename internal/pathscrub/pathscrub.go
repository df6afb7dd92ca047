// Package pathscrub rewrites the paths a server's answers would name:
// what an error says of the server's own folders is said relative to them,
// and any other absolute path by its last element. The servers' logs keep
// the whole error.
package pathscrub

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skeinhq/skein/internal/blob"
)

// pathRoot is a folder of the server whose paths answers name relative to
// it.
type pathRoot struct {
	dir  string // absolute, without a trailing separator
	name string // what the folder itself is called in an answer
}

// Scrubber rewrites the paths of an answer: a path in one of its folders
// is said relative to it ("runs/…", "hello.yaml"), the folder itself by
// what it is ("the data folder"), and any other absolute path by its last
// element ("…/secrets.env").
type Scrubber struct {
	roots []pathRoot // longest first: a folder inside another is said relative to itself
}

// New knows the folders of roots (folder → its name). Each is
// known by its path as given, its absolute path and its path through
// symlinks, whichever an error may name.
func New(roots map[string]string) *Scrubber {
	ps := &Scrubber{}
	seen := map[string]bool{}
	add := func(dir, name string) {
		dir = filepath.Clean(dir)
		if dir == "/" || dir == "." || seen[dir] {
			return
		}
		seen[dir] = true
		ps.roots = append(ps.roots, pathRoot{dir: dir, name: name})
	}
	for dir, name := range roots {
		if dir == "" {
			continue
		}
		add(dir, name)
		abs, err := filepath.Abs(dir)
		if err != nil {
			continue
		}
		add(abs, name)
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			add(real, name)
		}
	}
	sort.Slice(ps.roots, func(i, j int) bool {
		if len(ps.roots[i].dir) != len(ps.roots[j].dir) {
			return len(ps.roots[i].dir) > len(ps.roots[j].dir)
		}
		return ps.roots[i].dir < ps.roots[j].dir
	})
	return ps
}

// pathByte tells the bytes a path is made of, as errors write them.
func pathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80 ||
		strings.IndexByte("/._-~+@%:", c) >= 0
}

// Scrub rewrites the server's paths in text; it reports whether it found
// any. keep is a path text may name as it is (the request's own URL
// path, which is the caller's, not the server's).
func (ps *Scrubber) Scrub(text, keep string) (string, bool) {
	var b strings.Builder
	found := false
	for i := 0; i < len(text); {
		if i > 0 && pathByte(text[i-1]) || !pathByte(text[i]) {
			b.WriteByte(text[i])
			i++
			continue
		}
		end := i
		for end < len(text) && pathByte(text[end]) {
			end++
		}
		// A path in prose ends before its sentence's punctuation.
		for end > i+1 && strings.IndexByte(".,:;", text[end-1]) >= 0 {
			end--
		}
		word := text[i:end]
		if out, ok := ps.rewrite(word, keep); ok {
			b.WriteString(out)
			found = true
		} else {
			b.WriteString(word)
		}
		i = end
	}
	return b.String(), found
}

// rewrite is what an answer says for the word p when it is a path of the
// server's; false when it is none (a word, the request's own path, a
// single element such as /healthz, an API route).
func (ps *Scrubber) rewrite(p, keep string) (string, bool) {
	for _, r := range ps.roots {
		if p == r.dir && filepath.IsAbs(p) { // a relative one could be a word of prose
			return r.name, true
		}
		if rel, ok := strings.CutPrefix(p, r.dir+string(os.PathSeparator)); ok {
			return rel, true
		}
	}
	if p[0] != os.PathSeparator || keep != "" && strings.HasPrefix(p, keep) || strings.Count(p, string(os.PathSeparator)) < 2 {
		return "", false
	}
	for _, route := range []string{"/api/", "/hooks/", "/assets/"} {
		if strings.HasPrefix(p, route) {
			return "", false
		}
	}
	return "…" + string(os.PathSeparator) + filepath.Base(p), true
}

// Values returns m with each big value kept in a run folder named by its
// path as an answer says it ("runs/…/blobs/<sha256>", relative to the
// data folder) instead of the server's absolute path; a shared store's
// are named by its kind already. m is not modified.
func (ps *Scrubber) Values(m map[string]any) map[string]any {
	out, _ := blob.Replace(m, func(b *blob.Blob) (any, bool) {
		if b.Path() == "" {
			return b, false
		}
		p, _ := ps.Scrub(b.Path(), "")
		return b.RefAt(p), true
	}).(map[string]any)
	return out
}
