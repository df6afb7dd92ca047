package blob

import (
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Budget bounds the bytes of output values a run keeps in memory. Spill
// counts what it leaves in memory; once a run has kept its budget's worth,
// every value of MinSize bytes or more goes to a blob. Subworkflows share
// their parent's budget. It is safe for concurrent use.
type Budget struct {
	max  int64
	held atomic.Int64
	// spill makes SpillWithin's limit, spill and count one step, so that
	// values kept at once by concurrent tasks never pass the budget
	// together.
	spill sync.Mutex
}

// NewBudget returns a budget of max bytes; DefaultBudget when max <= 0.
func NewBudget(max int64) *Budget {
	if max <= 0 {
		max = DefaultBudget
	}
	return &Budget{max: max}
}

// Max is the budget in bytes.
func (b *Budget) Max() int64 { return b.max }

// Held is how many bytes of output values were kept in memory so far.
func (b *Budget) Held() int64 { return b.held.Load() }

// Limit is the size above which a value goes to a blob now: InlineLimit,
// or what is left of the budget when that is less, but never under
// MinSize.
func (b *Budget) Limit() int {
	if b == nil {
		return InlineLimit
	}
	left := b.max - b.held.Load()
	switch {
	case left >= InlineLimit:
		return InlineLimit
	case left <= MinSize:
		return MinSize
	}
	return int(left)
}

// Add counts n more bytes kept in memory.
func (b *Budget) Add(n int) {
	if b != nil {
		b.held.Add(int64(n))
	}
}

// SpillWithin spills m (see Spill) with b's limit and counts in b what
// stays in memory, one call of a budget at a time: two tasks that end
// together cannot both keep the budget's last bytes. A nil b spills with
// InlineLimit.
func (s *Store) SpillWithin(b *Budget, m map[string]any, keep ...string) (map[string]any, error) {
	if b == nil {
		out, _, err := s.Spill(m, InlineLimit, keep...)
		return out, err
	}
	b.spill.Lock()
	defer b.spill.Unlock()
	out, n, err := s.Spill(m, b.Limit(), keep...)
	if err == nil {
		b.Add(n)
	}
	return out, err
}

// Spill returns m with its values bigger than limit moved to blobs, and
// the bytes (roughly, as JSON) that the result still holds in memory:
//
//   - a text longer than limit becomes a Text blob;
//   - a list or object whose JSON would be longer than limit, once the
//     big values in it moved, becomes a JSON blob — except the top-level
//     values named in keep, which the scheduler reads (a foreach's items):
//     they stay lists, only their items may move;
//   - when m itself is still bigger than limit, its largest values of
//     MinSize bytes or more move until it is not;
//   - a Blob of another store (a pinned output of another run) is adopted
//     into this one.
//
// m is not modified: the maps and lists on the way to a moved value are
// copied, and m is returned as it is when nothing moves. A value that
// holds a secret stays (see the package doc).
func (s *Store) Spill(m map[string]any, limit int, keep ...string) (map[string]any, int, error) {
	if m == nil {
		return nil, 0, nil
	}
	sp := &spiller{s: s, limit: max(limit, MinSize)}
	limit = sp.limit
	var out map[string]any
	set := func(k string, v any) {
		if out == nil {
			out = make(map[string]any, len(m))
			for k2, e := range m {
				out[k2] = e
			}
		}
		out[k] = v
	}
	type entry struct {
		key  string
		size int
	}
	total := 2
	var big []entry
	for k, v := range m {
		whole := true
		for _, name := range keep {
			if name == k {
				whole = false
			}
		}
		nv, size, changed, err := sp.spill(v, whole, 0)
		if err != nil {
			return nil, 0, err
		}
		if changed {
			set(k, nv)
		}
		total += len(k) + 4 + size
		if size >= MinSize && whole {
			big = append(big, entry{k, size})
		}
	}
	if total > limit && len(big) > 0 {
		sort.Slice(big, func(i, j int) bool { return big[i].size > big[j].size })
		for _, e := range big {
			if total <= limit {
				break
			}
			cur := m[e.key]
			if out != nil {
				cur = out[e.key]
			}
			nv, err := s.move(cur)
			if err != nil {
				return nil, 0, err
			}
			if _, ok := nv.(*Blob); ok {
				set(e.key, nv)
				total -= e.size - refSize
			}
		}
	}
	if out == nil {
		return m, total, nil
	}
	return out, total, nil
}

// spiller is one Spill.
type spiller struct {
	s     *Store
	limit int
	// done holds the lists and objects that changed, by identity: one
	// held twice (a foreach's items and results) is written once.
	done map[identity]spilled
}

type identity struct {
	p uintptr
	n int
}

type spilled struct {
	v    any
	size int
}

// spill moves what is bigger than limit in v; whole lets v itself move
// when it is a list or an object. It returns the new value, its size in
// memory and whether it changed.
func (sp *spiller) spill(v any, whole bool, depth int) (any, int, bool, error) {
	var id identity
	switch x := v.(type) {
	case map[string]any:
		id = identity{uintptr(reflect.ValueOf(x).UnsafePointer()), -1}
	case []any:
		id = identity{uintptr(unsafe.Pointer(unsafe.SliceData(x))), len(x)}
	}
	if id.p != 0 && whole {
		if d, ok := sp.done[id]; ok {
			return d.v, d.size, true, nil
		}
	}
	nv, size, changed, err := sp.walk(v, whole, depth)
	if err == nil && changed && id.p != 0 && whole {
		if sp.done == nil {
			sp.done = map[identity]spilled{}
		}
		sp.done[id] = spilled{nv, size}
	}
	return nv, size, changed, err
}

func (sp *spiller) walk(v any, whole bool, depth int) (any, int, bool, error) {
	s, limit := sp.s, sp.limit
	switch x := v.(type) {
	case string:
		if len(x) <= limit {
			return v, len(x) + 2, false, nil
		}
		nv, err := s.Put(x)
		if err != nil {
			return nil, 0, false, err
		}
		if b, ok := nv.(*Blob); ok {
			return b, refSize, true, nil
		}
		return v, len(x) + 2, false, nil
	case *Blob:
		nv, err := s.Adopt(x)
		if err != nil {
			return nil, 0, false, err
		}
		if b, ok := nv.(*Blob); ok {
			return b, refSize, b != x, nil
		}
		str, _ := nv.(string)
		return nv, len(str) + 2, true, nil
	case map[string]any:
		if depth > maxDepth {
			return v, 2, false, nil
		}
		var out map[string]any
		total := 2
		for k, e := range x {
			ne, size, changed, err := sp.spill(e, true, depth+1)
			if err != nil {
				return nil, 0, false, err
			}
			if changed {
				if out == nil {
					out = make(map[string]any, len(x))
					for k2, e2 := range x {
						out[k2] = e2
					}
				}
				out[k] = ne
			}
			total += len(k) + 4 + size
		}
		var nv any = x
		if out != nil {
			nv = out
		}
		return sp.whole(nv, total, whole, out != nil)
	case []any:
		if depth > maxDepth {
			return v, 2, false, nil
		}
		var out []any
		total := 2
		for i, e := range x {
			ne, size, changed, err := sp.spill(e, true, depth+1)
			if err != nil {
				return nil, 0, false, err
			}
			if changed {
				if out == nil {
					out = append([]any(nil), x...)
				}
				out[i] = ne
			}
			total += 1 + size
		}
		var nv any = x
		if out != nil {
			nv = out
		}
		return sp.whole(nv, total, whole, out != nil)
	case nil, bool:
		return v, 5, false, nil
	}
	return v, 16, false, nil
}

// whole moves a list or object of size bytes to a JSON blob when it may
// and is over the limit.
func (sp *spiller) whole(v any, size int, whole, changed bool) (any, int, bool, error) {
	if !whole || size <= sp.limit {
		return v, size, changed, nil
	}
	nv, err := sp.s.PutJSON(v)
	if err != nil {
		return nil, 0, false, err
	}
	if b, ok := nv.(*Blob); ok {
		return b, refSize, true, nil
	}
	return v, size, changed, nil
}

// move puts one value in a blob when it is a text, list or object.
func (s *Store) move(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return s.Put(x)
	case map[string]any, []any:
		return s.PutJSON(x)
	}
	return v, nil
}
