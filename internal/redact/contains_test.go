package redact

import (
	"strings"
	"testing"
)

// FuzzContains: the one-pass search finds a form exactly where looking
// for each form in turn does.
func FuzzContains(f *testing.F) {
	f.Add("Sk3in+Canary/Zq7vW3x9=Kp2!", "out Sk3in+Canary/Zq7vW3x9=Kp2!\n")
	f.Add("abc", "xxabcxx")
	f.Add("hunter22", "aHVudGVyMjI=")
	f.Add("hunter22", "6875")
	f.Fuzz(func(t *testing.T, secret, text string) {
		r := New(map[string]string{"S": secret})
		if r == nil {
			return
		}
		want := false
		for _, form := range r.forms {
			if strings.Contains(text, form) {
				want = true
			}
		}
		if got := r.Contains(text); got != want {
			t.Fatalf("Contains(%q) with secret %q = %v, want %v", text, secret, got, want)
		}
		if got := r.ContainsBytes([]byte(text)); got != want {
			t.Fatalf("ContainsBytes(%q) with secret %q = %v, want %v", text, secret, got, want)
		}
	})
}
