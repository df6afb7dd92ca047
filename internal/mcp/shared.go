package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/workflow"
)

// DefaultIdle is how long a Shared keeps a pool no run uses.
const DefaultIdle = time.Minute

// Shared keeps MCP pools across the runs of one process (a queue worker):
// runs whose servers render to the same commands, arguments, environment,
// working folders, URLs and headers share one pool, so the process starts
// each server once, not once per run. Runs whose secrets or inputs change
// what a server is given get pools of their own. A pool no run uses is
// closed after Idle (DefaultIdle when zero). Its methods are safe for
// concurrent use.
type Shared struct {
	Idle time.Duration

	mu     sync.Mutex
	pools  map[string]*sharedPool
	closed bool
}

type sharedPool struct {
	pool  *Pool
	refs  int
	timer *time.Timer
}

// Acquire returns the pool of servers rendered in scope and a func that
// releases it. Servers that cannot be rendered get a pool of their own
// (its first use reports the template's error).
func (s *Shared) Acquire(servers []*workflow.MCPServer, scope *expr.Scope) (*Pool, func()) {
	key, ok := Key(servers, scope)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok || s.closed {
		p := NewPool(servers, scope)
		return p, func() { _ = p.Close() }
	}
	if s.pools == nil {
		s.pools = map[string]*sharedPool{}
	}
	sp := s.pools[key]
	if sp == nil {
		sp = &sharedPool{pool: NewPool(servers, scope)}
		s.pools[key] = sp
	}
	if sp.timer != nil {
		sp.timer.Stop()
		sp.timer = nil
	}
	sp.refs++
	var once sync.Once
	return sp.pool, func() { once.Do(func() { s.release(key, sp) }) }
}

func (s *Shared) release(key string, sp *sharedPool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp.refs--
	if sp.refs > 0 || s.closed {
		return
	}
	idle := s.Idle
	if idle <= 0 {
		idle = DefaultIdle
	}
	sp.timer = time.AfterFunc(idle, func() {
		s.mu.Lock()
		if sp.refs > 0 || s.pools[key] != sp {
			s.mu.Unlock()
			return
		}
		delete(s.pools, key)
		s.mu.Unlock()
		_ = sp.pool.Close()
	})
}

// Close closes every pool, used or not, and makes later Acquires return
// pools of their own.
func (s *Shared) Close() error {
	s.mu.Lock()
	s.closed = true
	pools := s.pools
	s.pools = nil
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, sp := range pools {
		if sp.timer != nil {
			sp.timer.Stop()
		}
		wg.Go(func() { _ = sp.pool.Close() })
	}
	wg.Wait()
	return nil
}

// Len is the number of pools kept.
func (s *Shared) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pools)
}

// Key identifies servers as they start in scope: a digest of each one's
// name, command, working folder, URL and rendered arguments, environment
// and headers. It reports false when a template does not render.
func Key(servers []*workflow.MCPServer, scope *expr.Scope) (string, bool) {
	type rendered struct {
		Name, Command, Cwd, URL string
		Args                    []string
		Env, Headers            map[string]string
	}
	out := make([]rendered, 0, len(servers))
	render := func(m map[string]string) (map[string]string, bool) {
		r := make(map[string]string, len(m))
		for k, v := range m {
			s, err := renderString(v, scope)
			if err != nil {
				return nil, false
			}
			r[k] = s
		}
		return r, true
	}
	for _, sv := range servers {
		r := rendered{Name: sv.Name, Command: sv.Command, Cwd: sv.Cwd, URL: sv.URL}
		for _, a := range sv.Args {
			s, err := renderString(a, scope)
			if err != nil {
				return "", false
			}
			r.Args = append(r.Args, s)
		}
		var ok bool
		if r.Env, ok = render(sv.Env); !ok {
			return "", false
		}
		if r.Headers, ok = render(sv.Headers); !ok {
			return "", false
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b rendered) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	raw, err := json.Marshal(out) // maps marshal with sorted keys
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), true
}
