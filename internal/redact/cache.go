package redact

import (
	"slices"
	"strings"
	"sync"
)

// Cache hands out the Redactor of a set of secret values, making it once:
// a Redactor does not change once made, so runs with the same secrets
// (a served webhook's every run) share one. It keeps at most MaxCached,
// forgetting them all when full. The zero Cache is ready to use and safe
// for concurrent use.
type Cache struct {
	mu    sync.Mutex
	byKey map[string]*Redactor
}

// MaxCached bounds the Redactors a Cache keeps.
const MaxCached = 64

// For returns the Redactor of secrets (New), nil when there are none.
func (c *Cache) For(secrets map[string]string) *Redactor {
	if len(secrets) == 0 {
		return nil
	}
	values := make([]string, 0, len(secrets))
	for _, v := range secrets {
		values = append(values, v)
	}
	slices.Sort(values)
	key := strings.Join(values, "\x00")
	c.mu.Lock()
	defer c.mu.Unlock()
	if red, ok := c.byKey[key]; ok {
		return red
	}
	if len(c.byKey) >= MaxCached || c.byKey == nil {
		c.byKey = map[string]*Redactor{}
	}
	red := New(secrets)
	c.byKey[key] = red
	return red
}
