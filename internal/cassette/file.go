package cassette

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"slices"
	"unicode"
)

// File is a cassette opened for replays (Open): its header and an index
// of its entries that holds, per entry, where its line is in the file and
// hashes of its caller and of its request hash — never a request or an
// answer. A replay reads an entry's line when it looks at it, so that the
// memory of a replay is the index (SlotSize bytes an entry, and one more
// for each replay's marks) and the entries it is answering with, whatever
// the size of the requests and answers in the file. Many replays
// may share a File; its methods are safe for concurrent use.
type File struct {
	Header Header
	path   string
	r      io.ReaderAt
	closer io.Closer
	// mem holds the entries of a cassette in memory (NewPlayer); a slot's
	// off is then its index.
	mem  []*Entry
	seed maphash.Seed
	// body is where the entries' lines start, after the header's.
	body int64
	// slots are the entries ordered by caller, then by place in the file:
	// the entries of a caller are a run of slots, in the order recorded.
	slots   []slot
	largest int64
}

// slot is an entry in the index.
type slot struct {
	// off and n are the entry's line in the file, without its newline.
	off, n int64
	// who hashes the caller (kind, node, visit, attempt), req the entry's
	// Hash: a slot whose both hashes match is read to be sure.
	who, req uint64
}

// SlotSize is what the index of a File holds for each entry, in bytes.
const SlotSize = 32

// meta is an entry's line as the index reads it: the request and answer
// are checked to be JSON, not kept.
type meta struct {
	Kind     string  `json:"kind"`
	Node     string  `json:"node"`
	Visit    int     `json:"visit"`
	Attempt  int     `json:"attempt"`
	Hash     string  `json:"hash"`
	Request  skipped `json:"request"`
	Response skipped `json:"response"`
	Error    *Error  `json:"error"`
	New      bool    `json:"new"`
}

// skipped is a JSON value read and dropped (the decoder has checked it).
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

// Open opens a cassette file for replays: it reads the file once to check
// every line and index the entries (File), and keeps it open until Close.
// Its errors name the file and the line.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no cassette: record the run with skein run --record (or record: true in the workflow): %w", path, err)
		}
		return nil, err
	}
	f, err := index(path, fh)
	if err != nil {
		fh.Close()
		return nil, err
	}
	f.closer = fh
	return f, nil
}

// Close closes the file: the replays of f can read no more entries.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	return f.closer.Close()
}

// Len is the number of entries.
func (f *File) Len() int { return len(f.slots) }

// Largest is the size of the largest entry's line, in bytes.
func (f *File) Largest() int64 { return f.largest }

// IndexSize is the memory the index holds, in bytes: SlotSize an entry,
// as many as the slice has room for.
func (f *File) IndexSize() int64 { return int64(cap(f.slots)) * SlotSize }

func index(path string, r io.ReaderAt) (*File, error) {
	f := &File{path: path, r: r, seed: maphash.MakeSeed()}
	header := false
	err := lines(path, io.NewSectionReader(r, 0, math.MaxInt64), 0, func(text []byte, line int, off int64) error {
		if !header {
			header = true
			if err := json.Unmarshal(text, &f.Header); err != nil || f.Header.Cassette <= 0 {
				return fmt.Errorf("%s:%d: not a cassette header (want {\"cassette\": %d, …})", path, line, Version)
			}
			if f.Header.Cassette > Version {
				return fmt.Errorf("%s:%d: cassette format %d is newer than this skein reads (%d); upgrade skein", path, line, f.Header.Cassette, Version)
			}
			f.body = off + int64(len(text))
			return nil
		}
		var m meta
		if err := json.Unmarshal(text, &m); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if m.Kind == "" || m.Hash == "" {
			return fmt.Errorf("%s:%d: an entry needs a kind and a hash", path, line)
		}
		n := int64(len(text))
		f.slots = append(f.slots, slot{off: off, n: n, who: f.who(key{kind: m.Kind, node: m.Node, visit: m.Visit, attempt: m.Attempt}), req: f.sum(m.Hash)})
		f.largest = max(f.largest, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !header {
		return nil, fmt.Errorf("%s: the cassette is empty", path)
	}
	f.slots = slices.Clip(f.slots)
	f.sort()
	return f, nil
}

// inMemory is c as a File whose entries are c's.
func inMemory(c *Cassette) *File {
	f := &File{Header: c.Header, mem: c.Entries, seed: maphash.MakeSeed()}
	f.slots = make([]slot, len(c.Entries))
	for i, e := range c.Entries {
		f.slots[i] = slot{off: int64(i), who: f.who(key{kind: e.Kind, node: e.Node, visit: e.Visit, attempt: e.Attempt}), req: f.sum(e.Hash)}
	}
	f.sort()
	return f
}

func (f *File) sort() {
	slices.SortStableFunc(f.slots, func(a, b slot) int { return cmp.Compare(a.who, b.who) })
}

func (f *File) who(k key) uint64 {
	var h maphash.Hash
	h.SetSeed(f.seed)
	h.WriteString(k.kind)
	h.WriteByte(0)
	h.WriteString(k.node)
	h.WriteByte(0)
	var n [16]byte
	binary.LittleEndian.PutUint64(n[:8], uint64(k.visit))
	binary.LittleEndian.PutUint64(n[8:], uint64(k.attempt))
	h.Write(n[:])
	return h.Sum64()
}

func (f *File) sum(hash string) uint64 { return maphash.String(f.seed, hash) }

// callers returns the slots of k's caller: f.slots[lo:hi] (a rare other
// caller whose hash is the same among them: check the entries).
func (f *File) callers(k key) (lo, hi int) {
	who := f.who(k)
	lo, _ = slices.BinarySearchFunc(f.slots, who, func(s slot, w uint64) int { return cmp.Compare(s.who, w) })
	hi = lo
	for hi < len(f.slots) && f.slots[hi].who == who {
		hi++
	}
	return lo, hi
}

// entry reads the entry of slot i.
func (f *File) entry(i int) (*Entry, error) {
	s := f.slots[i]
	if f.mem != nil {
		return f.mem[s.off], nil
	}
	b := make([]byte, s.n)
	if n, err := f.r.ReadAt(b, s.off); n < len(b) {
		return nil, fmt.Errorf("%s: reading the entry at byte %d: %w", f.path, s.off, err)
	}
	e := &Entry{}
	if err := json.Unmarshal(b, e); err != nil {
		return nil, fmt.Errorf("%s: the entry at byte %d no longer reads (the file changed during the replay?): %w", f.path, s.off, err)
	}
	return e, nil
}

// is reports whether e is an entry of k's caller.
func (e *Entry) is(k key) bool {
	return e.Kind == k.kind && e.Node == k.node && e.Visit == k.visit && e.Attempt == k.attempt
}

// writeEntries writes f's entries to w, one line each, in the file's
// order: the lines copied, not decoded.
func (f *File) writeEntries(w io.Writer) error {
	if f.mem != nil {
		return encode(w, f.mem)
	}
	return lines(f.path, io.NewSectionReader(f.r, f.body, math.MaxInt64-f.body), f.body, func(text []byte, _ int, _ int64) error {
		if _, err := w.Write(text); err != nil {
			return err
		}
		_, err := w.Write([]byte{'\n'})
		return err
	})
}

// entries reads f's entries, in the file's order.
func (f *File) entries() ([]*Entry, error) {
	if f.mem != nil {
		return append([]*Entry(nil), f.mem...), nil
	}
	var out []*Entry
	err := lines(f.path, io.NewSectionReader(f.r, f.body, math.MaxInt64-f.body), f.body, func(text []byte, _ int, off int64) error {
		e := &Entry{}
		if err := json.Unmarshal(text, e); err != nil {
			return fmt.Errorf("%s: the entry at byte %d no longer reads (the file changed?): %w", f.path, off, err)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// lines calls fn with each line of r that is not blank, trimmed, its
// number (from 1) and its offset (r starts at base). A line is held whole
// however long it is; only one at a time.
func lines(path string, r io.Reader, base int64, fn func(text []byte, line int, off int64) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	off := base
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %w", path, err)
		}
		lead := len(b) - len(bytes.TrimLeftFunc(b, unicode.IsSpace))
		if text := bytes.TrimRightFunc(b[lead:], unicode.IsSpace); len(text) > 0 {
			if ferr := fn(text, line, off+int64(lead)); ferr != nil {
				return ferr
			}
		}
		off += int64(len(b))
		if err != nil { // io.EOF
			return nil
		}
	}
}
