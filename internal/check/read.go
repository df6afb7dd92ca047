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
