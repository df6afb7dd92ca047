package cassette

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"time"
)

// FileName is the cassette's name in a run folder.
const FileName = "cassette.jsonl"

// Version is the format of the cassettes this package writes.
const Version = 1

// Kinds of interaction.
const (
	// KindHTTP is an HTTP exchange: a model's API call or an http node's
	// request (a streamed answer is kept whole).
	KindHTTP = "http"
	// KindMCPCall is an MCP tool call and its result.
	KindMCPCall = "mcp_call"
	// KindMCPTools is an MCP server's tool list. It belongs to the
	// server, not to a call: the run lists a server's tools once,
	// whichever node asks first.
	KindMCPTools = "mcp_tools"
	// KindShell is a shell node's command and its result (stdout,
	// stderr, exit code).
	KindShell = "shell"
	// KindClock is the times a call read from the run's clock
	// (node.Call.Now), in order: one entry per call, its response the
	// list of times.
	KindClock = "clock"
)

// Header is the first line of a cassette.
type Header struct {
	Cassette int    `json:"cassette"`
	Workflow string `json:"workflow"`
	RunID    string `json:"run_id"`
	// StartedAt is the recorded run's start (execution.started_at).
	StartedAt time.Time `json:"started_at"`
	// Env holds the model settings the run read from the environment
	// (SKEIN_LLM_PROVIDER, SKEIN_LLM_MODEL, SKEIN_LLM_BASE_URL), masked,
	// so that a replay elsewhere resolves the same models.
	Env map[string]string `json:"env,omitempty"`
}

// Entry is one recorded interaction.
type Entry struct {
	Kind    string `json:"kind"`
	Node    string `json:"node,omitempty"`
	Visit   int    `json:"visit,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Hash is the SHA-256 of the masked request, without its host.
	Hash     string          `json:"hash"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response,omitempty"`
	Error    *Error          `json:"error,omitempty"`
	// New marks an entry a replay with --allow-new appended.
	New bool `json:"new,omitempty"`
}

// Error is a recorded failure of an interaction.
type Error struct {
	Code      string         `json:"code,omitempty"`
	Category  string         `json:"category,omitempty"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details,omitempty"`
	Permanent bool           `json:"permanent,omitempty"`
}

// Cassette is a cassette file's content.
type Cassette struct {
	Header  Header
	Entries []*Entry
}

// Read reads a cassette file whole, every entry in memory; a replay opens
// it instead (Open). Its errors name the file and the line.
func Read(path string) (*Cassette, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.entries()
	if err != nil {
		return nil, err
	}
	return &Cassette{Header: f.Header, Entries: entries}, nil
}

// Write writes c to path atomically: a reader sees the old file or the
// new one.
func (c *Cassette) Write(path string) error {
	return writeAtomic(path, c.Header, func(w io.Writer) error { return encode(w, c.Entries) })
}

// writeAtomic writes a cassette of header h to path through a temporary
// file renamed into place: its entries are what entries writes.
func writeAtomic(path string, h Header, entries func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cassette-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 64<<10)
	h.Cassette = Version
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	err = enc.Encode(h)
	if err == nil {
		err = entries(w)
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// encode writes entries to w, one line each.
func encode(w io.Writer, entries []*Entry) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}
