package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/skeinhq/skein/workflow"
)

// ConfigFile is the name of the project configuration file. The first one
// found in the current folder or above it gives the defaults of --dir,
// --model and --concurrency; flags, then the environment, win over it.
const ConfigFile = ".skein.yaml"

// Environment variables that set defaults (flags win over them; they win
// over the configuration file).
const (
	envDir         = "SKEIN_DIR"
	envDB          = "SKEIN_DB"
	envBlobs       = "SKEIN_BLOBS"
	envConcurrency = "SKEIN_CONCURRENCY"
	envModel       = "SKEIN_LLM_MODEL" // llm.EnvModel, read by the runner
)

// projectConfig is a configuration file's content.
type projectConfig struct {
	// Path is the file it was read from; empty when there is none.
	Path string
	// Dir is absolute: a relative dir: is taken from the file's folder.
	Dir         string
	Model       string
	Concurrency int
}

var configKeys = []string{"dir", "model", "concurrency"}

// findConfig reads the first ConfigFile in start or a folder above it; it
// returns an empty config when there is none.
func findConfig(start string) (*projectConfig, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return nil, err
	}
	for {
		p := filepath.Join(dir, ConfigFile)
		data, err := os.ReadFile(p)
		switch {
		case err == nil:
			return parseConfig(p, data)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		up := filepath.Dir(dir)
		if up == dir {
			return &projectConfig{}, nil
		}
		dir = up
	}
}

// parseConfig reads a configuration file: a YAML map of the keys
// configKeys, each optional.
func parseConfig(path string, data []byte) (*projectConfig, error) {
	c := &projectConfig{Path: path}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return c, nil
		}
		pos, msg := workflow.YAMLError(data, err)
		return nil, fmt.Errorf("%s:%d:%d: %s", path, pos.Line, pos.Col, msg)
	}
	if len(doc.Content) == 0 {
		return c, nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: expected a map of %s", path, m.Line, strings.Join(configKeys, ", "))
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		at := fmt.Sprintf("%s:%d", path, k.Line)
		switch {
		case !slices.Contains(configKeys, k.Value):
			return nil, fmt.Errorf("%s: unknown key %q (the keys are %s)", at, k.Value, strings.Join(configKeys, ", "))
		case v.Kind != yaml.ScalarNode:
			return nil, fmt.Errorf("%s: %s must be a single value", at, k.Value)
		case v.ShortTag() == "!!null":
			continue // written and left empty: as if not written
		}
		switch k.Value {
		case "dir":
			if v.Value == "" {
				return nil, fmt.Errorf("%s: dir is empty", at)
			}
			c.Dir = v.Value
			if !filepath.IsAbs(c.Dir) {
				c.Dir = filepath.Join(filepath.Dir(path), c.Dir)
			}
		case "model":
			c.Model = v.Value
		case "concurrency":
			n, err := strconv.Atoi(v.Value)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%s: concurrency must be a whole number of at least 1, not %q", at, v.Value)
			}
			c.Concurrency = n
		default:
			return nil, fmt.Errorf("%s: unknown key %q (the keys are %s)", at, k.Value, strings.Join(configKeys, ", "))
		}
	}
	return c, nil
}

// config returns the project configuration, reading it on first use.
func (e *env) config() (*projectConfig, error) {
	if e.cfg != nil || e.cfgErr != nil {
		return e.cfg, e.cfgErr
	}
	wd := e.wd
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			e.cfgErr = err
			return nil, err
		}
	}
	e.cfg, e.cfgErr = findConfig(wd)
	return e.cfg, e.cfgErr
}

// applyDefaults gives the --dir, --concurrency and --model flags of cmd
// that were not set their value from the environment, else from the
// configuration file, else their built-in default. It runs before every
// command (the root's PersistentPreRunE).
func (e *env) applyDefaults(cmd *cobra.Command) error {
	fl := cmd.Flags()
	dir, conc, model := fl.Lookup("dir"), fl.Lookup("concurrency"), fl.Lookup("model")
	if dir == nil && conc == nil && model == nil {
		return nil
	}
	cfg, err := e.config()
	if err != nil {
		return usagef("%v", err)
	}
	if db := fl.Lookup("db"); db != nil {
		e.db = db.Value.String()
		if v, ok := e.lookupEnv(envDB); ok && !db.Changed {
			e.db = v
		}
	}
	if b := fl.Lookup("blobs"); b != nil {
		e.blobs = b.Value.String()
		if v, ok := e.lookupEnv(envBlobs); ok && !b.Changed {
			e.blobs = v
		}
	}
	if dir != nil && !dir.Changed {
		v, ok := e.lookupEnv(envDir)
		switch {
		case ok && v != "":
		case cfg.Dir != "":
			v = cfg.Dir
		default:
			v = defaultDir
		}
		_ = dir.Value.Set(v)
	}
	if conc != nil && !conc.Changed {
		v, ok := e.lookupEnv(envConcurrency)
		switch {
		case ok && v != "":
			if n, err := strconv.Atoi(v); err != nil || n < 1 {
				return usagef("%s=%s: must be a whole number of at least 1", envConcurrency, v)
			}
		case cfg.Concurrency > 0:
			v = strconv.Itoa(cfg.Concurrency)
		default:
			v = strconv.Itoa(defaultConcurrency)
		}
		_ = conc.Value.Set(v)
	}
	if model != nil && model.Changed {
		e.model = model.Value.String()
	}
	return nil
}

// getenv is the environment runs see: SKEIN_LLM_MODEL is --model, else
// the environment's, else the configuration file's model:.
func (e *env) getenv(key string) (string, bool) {
	if key != envModel {
		return e.lookupEnv(key)
	}
	if e.model != "" {
		return e.model, true
	}
	if v, ok := e.lookupEnv(key); ok {
		return v, true
	}
	if e.cfg != nil && e.cfg.Model != "" {
		return e.cfg.Model, true
	}
	return "", false
}
