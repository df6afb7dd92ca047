package auth

import (
	"fmt"
	"strings"
)

// Scope is what a token may do. Scopes are ordered: a token of a scope may
// do what every lower scope may. A token's scope is stored by its name,
// never its number, so adding a scope between two leaves every stored
// token its powers.
type Scope int

// Scopes, lowest first. None is the scope of no token.
const (
	None Scope = iota
	// Read lists and shows workflows and runs, and follows their events.
	Read
	// Run also starts, cancels, resumes and reruns runs.
	Run
	// Edit also creates and changes the workflow files a server serves
	// (the web editor's saves).
	Edit
	// Admin may do everything.
	Admin
)

var scopeNames = []string{None: "none", Read: "read", Run: "run", Edit: "edit", Admin: "admin"}

func (s Scope) String() string {
	if s < None || int(s) >= len(scopeNames) {
		return fmt.Sprintf("scope(%d)", int(s))
	}
	return scopeNames[s]
}

// Allows reports whether a token of scope s may do what needs want.
func (s Scope) Allows(want Scope) bool { return s >= want }

// ParseScope reads a scope's name: read, run, edit or admin.
func ParseScope(name string) (Scope, error) {
	for i, n := range scopeNames {
		if i > 0 && strings.EqualFold(name, n) {
			return Scope(i), nil
		}
	}
	return None, fmt.Errorf("unknown scope %q; use read, run, edit or admin", name)
}

// Names are the names of the scopes a token may have, lowest first.
func Names() []string { return append([]string(nil), scopeNames[Read:]...) }
