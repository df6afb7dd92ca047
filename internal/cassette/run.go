package cassette

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/skeinhq/skein/internal/llm"
)

// modelEnv are the model settings a cassette keeps (Header.Env).
var modelEnv = []string{llm.EnvProvider, llm.EnvModel, llm.EnvBaseURL}

// NewRunRecorder is the recorder of a run of workflow: its header keeps
// the model settings of the environment (masked), for a replay to use the
// same models.
func NewRunRecorder(workflow, runID string, started time.Time, getenv func(string) (string, bool), mask func(string) string) *Tape {
	mask = orIdentity(mask)
	h := Header{Workflow: workflow, RunID: runID, StartedAt: started}
	for _, k := range modelEnv {
		if v, ok := getenv(k); ok {
			if h.Env == nil {
				h.Env = map[string]string{}
			}
			h.Env[k] = mask(v)
		}
	}
	return NewRecorder(h, mask)
}

// Save writes a run's cassette in its folder dir and, when a replay of
// the cassette file replayed (none: "") added interactions (AllowNew),
// appends them to that file too.
func Save(t *Tape, dir, replayed string) error {
	if err := t.WriteFile(filepath.Join(dir, FileName)); err != nil {
		return fmt.Errorf("writing the run's cassette: %w", err)
	}
	if replayed != "" && t.Added() > 0 {
		if err := t.WriteFile(replayed); err != nil {
			return fmt.Errorf("appending the new interactions to %s: %w", replayed, err)
		}
	}
	return nil
}

// Source is the cassette a run answers its interactions from.
type Source struct {
	// Cassette is the cassette, open (Open); who opened it closes it once
	// the run has ended.
	Cassette *File
	// File, when set, is the cassette's file: the interactions AllowNew
	// sends live are appended to it.
	File string
	// AllowNew sends a request the cassette has no answer for live, and
	// keeps its exchange; without it such a request fails its node with
	// the difference from the one recorded there.
	AllowNew bool
}

// ForRun is the tape of a run of workflow: a player of src when it
// replays one, a recorder when it records, else nil.
func ForRun(src *Source, record bool, workflow, runID string, started time.Time, getenv func(string) (string, bool), mask func(string) string) *Tape {
	switch {
	case src != nil:
		return src.Cassette.Player(runID, started, mask, src.AllowNew)
	case record:
		return NewRunRecorder(workflow, runID, started, getenv, mask)
	}
	return nil
}

// SaveRun writes a run's cassette in its folder dir (Save), and the
// interactions a replay of src added to src's file.
func SaveRun(t *Tape, dir string, src *Source) error {
	replayed := ""
	if src != nil {
		replayed = src.File
	}
	return Save(t, dir, replayed)
}

// ReadRun opens the cassette a recorded run kept in its folder dir, as the
// source of a replay of it: close its Cassette once the replay has ended.
func ReadRun(dir string, allowNew bool) (*Source, error) {
	file := filepath.Join(dir, FileName)
	c, err := Open(file)
	if err != nil {
		return nil, err
	}
	return &Source{Cassette: c, File: file, AllowNew: allowNew}, nil
}
