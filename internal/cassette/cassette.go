package cassette

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// Read reads a cassette file. Its errors name the file and the line.
func Read(path string) (*Cassette, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no cassette: record the run with skein run --record (or record: true in the workflow): %w", path, err)
		}
		return nil, err
	}
	c := &Cassette{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), len(b)+1)
	line := 0
	header := false
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if !header {
			header = true
			if err := json.Unmarshal(text, &c.Header); err != nil || c.Header.Cassette <= 0 {
				return nil, fmt.Errorf("%s:%d: not a cassette header (want {\"cassette\": %d, …})", path, line, Version)
			}
			if c.Header.Cassette > Version {
				return nil, fmt.Errorf("%s:%d: cassette format %d is newer than this skein reads (%d); upgrade skein", path, line, c.Header.Cassette, Version)
			}
			continue
		}
		e := &Entry{}
		if err := json.Unmarshal(text, e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if e.Kind == "" || e.Hash == "" {
			return nil, fmt.Errorf("%s:%d: an entry needs a kind and a hash", path, line)
		}
		c.Entries = append(c.Entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !header {
		return nil, fmt.Errorf("%s: the cassette is empty", path)
	}
	return c, nil
}

// Write writes c to path atomically: a reader sees the old file or the
// new one.
func (c *Cassette) Write(path string) error {
	var buf bytes.Buffer
	h := c.Header
	h.Cassette = Version
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return err
	}
	for _, e := range c.Entries {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cassette-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
