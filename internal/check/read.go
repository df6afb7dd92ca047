package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ReadVerdict reads the verdict file of the run folder dir; nil when it
// has none.
func ReadVerdict(dir string) (*RunVerdict, error) {
	path := filepath.Join(dir, VerdictFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v RunVerdict
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &v, nil
}

// VerdictIn is the verdict in the run folder dir; nil when it has none
// or it does not read.
func VerdictIn(dir string) *RunVerdict {
	if dir == "" {
		return nil
	}
	v, _ := ReadVerdict(dir)
	return v
}

// VerdictStatus is the status of the checks of the run whose folder is
// dir, read from its verdict file: "" when it has none.
func VerdictStatus(dir string) string {
	if v := VerdictIn(dir); v != nil {
		return v.Status
	}
	return ""
}
