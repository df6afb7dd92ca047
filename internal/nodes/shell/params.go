package shell

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/skeinhq/skein/internal/proc"
	"github.com/skeinhq/skein/node"
)

// shellPath is the shell that runs commands with shell: true.
const shellPath = "/bin/sh"

// defaultPath is the child's PATH when Skein itself has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// config is one attempt's parameters, checked and converted.
type config struct {
	argv []string
	// label names the command in messages: the program only, never its
	// arguments, which may hold secrets.
	label        string
	env          []string
	path         string // the child's PATH, to find the program in
	cwd          string
	stdin        *string
	allowFailure bool
	maxOutput    int
	// checkOptions is set when templated arguments that begin with "-"
	// must be refused: an argv list without allow_option_args.
	checkOptions bool
}

// parseParams reads the rendered parameters. Its errors are permanent: the
// same parameters fail the same way on every attempt.
func parseParams(p map[string]any) (*config, error) {
	c := &config{maxOutput: DefaultMaxOutput}
	sh, err := boolParam(p, "shell")
	if err != nil {
		return nil, err
	}
	if c.allowFailure, err = boolParam(p, "allow_failure"); err != nil {
		return nil, err
	}
	allowOptions, err := boolParam(p, "allow_option_args")
	if err != nil {
		return nil, err
	}
	c.checkOptions = !sh && !allowOptions
	if c.argv, err = argv(p["command"], sh); err != nil {
		return nil, err
	}
	c.label = fmt.Sprintf("command %q", c.argv[0])
	if sh {
		c.label = "shell command"
	}
	if c.env, c.path, err = environ(p["env"]); err != nil {
		return nil, err
	}
	if v, ok := p["cwd"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return nil, invalid("cwd", "cwd is %s; give a folder path", describe(v))
		}
		if s != "" {
			fi, err := os.Stat(s)
			switch {
			case err != nil:
				return nil, invalid("cwd", "cwd %q: %v", s, unwrapPath(err))
			case !fi.IsDir():
				return nil, invalid("cwd", "cwd %q is not a folder", s)
			}
		}
		c.cwd = s
	}
	if v, ok := p["stdin"]; ok && v != nil {
		s, err := stdinText(v)
		if err != nil {
			return nil, err
		}
		c.stdin = &s
	}
	if v, ok := p["max_output"]; ok && v != nil {
		n, ok := intValue(v)
		if !ok || n < 0 {
			return nil, invalid("max_output", "max_output is %s; give a number of bytes (0 or more)", describe(v))
		}
		c.maxOutput = n
	}
	return c, nil
}

// argv returns the program and its arguments.
func argv(v any, sh bool) ([]string, error) {
	if s, ok := v.(string); ok {
		if !sh {
			return nil, invalid("command", "command is a string; give an argv list ([echo, hi]) or set shell: true to run it through /bin/sh")
		}
		return []string{shellPath, "-c", s}, nil
	}
	rv := reflect.ValueOf(v)
	if v == nil || rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array || rv.Type().Elem().Kind() == reflect.Uint8 {
		return nil, invalid("command", "command is %s; give an argv list of strings", describe(v))
	}
	if rv.Len() == 0 {
		return nil, invalid("command", "command is an empty list; give at least the program")
	}
	args := make([]string, rv.Len())
	for i := range args {
		e := rv.Index(i).Interface()
		s, ok := scalarString(e)
		if !ok {
			return nil, invalid("command", "argument %d of command is %s; every element must be a string, number or boolean", i, describe(e))
		}
		if strings.IndexByte(s, 0) >= 0 {
			return nil, invalid("command", "argument %d of command holds a NUL byte, which no program can receive", i)
		}
		args[i] = s
	}
	if args[0] == "" {
		return nil, invalid("command", "the program (first element of command) is empty")
	}
	if sh {
		// sh -c script $0 $1 …: the list's other elements become "$1", "$2", ….
		return append([]string{shellPath, "-c", args[0], "sh"}, args[1:]...), nil
	}
	return args, nil
}

// environ builds the child's environment from baseEnv and the env
// parameter, and returns it with the child's PATH.
func environ(v any) ([]string, string, error) {
	vars := proc.Base()
	if _, ok := vars["PATH"]; !ok {
		vars["PATH"] = defaultPath
	}
	if v != nil {
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
			return nil, "", invalid("env", "env is %s; give a map of names to values", describe(v))
		}
		for it := rv.MapRange(); it.Next(); {
			k := it.Key().String()
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return nil, "", invalid("env", "env has the name %q; a variable name must be non-empty, without '=' or NUL", k)
			}
			val := it.Value().Interface()
			s, ok := "", true
			if val != nil {
				s, ok = scalarString(val)
			}
			if !ok {
				return nil, "", invalid("env", "env %s is %s; give a string, number or boolean", k, describe(val))
			}
			if strings.IndexByte(s, 0) >= 0 {
				return nil, "", invalid("env", "env %s holds a NUL byte", k)
			}
			vars[k] = s
		}
	}
	env := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	return env, vars["PATH"], nil
}

// stdinText is the text a stdin value stands for: a scalar as text, a list
// or map as JSON.
func stdinText(v any) (string, error) {
	if s, ok := scalarString(v); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", invalid("stdin", "stdin is %s, which cannot be written as JSON: %v", describe(v), err)
	}
	return string(b), nil
}

// boolParam reads a boolean parameter; a template may have rendered it as
// "true" or "false".
func boolParam(p map[string]any, name string) (bool, error) {
	switch v := p[name].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b, nil
		}
	}
	return false, invalid(name, "%s is %s; give true or false", name, describe(p[name]))
}

// intValue reads a whole number of any numeric type, or its decimal text.
func intValue(v any) (int, bool) {
	switch v := v.(type) {
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return n, err == nil
	case float32:
		return intValue(float64(v))
	case float64:
		if v != math.Trunc(v) || v < math.MinInt64 || v >= math.MaxInt64 {
			return 0, false
		}
		return int(v), true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := rv.Int()
		return int(n), int64(int(n)) == n
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := rv.Uint()
		return int(n), n <= math.MaxInt
	}
	return 0, false
}

// scalarString turns a string, number or boolean into the text a program
// receives; numbers are written as a person would (3, 1.5, 1000000).
func scalarString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case json.Number:
		return v.String(), true
	case float32:
		return formatFloat(float64(v), 32), true
	case float64:
		return formatFloat(v, 64), true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10), true
	case reflect.String:
		return rv.String(), true
	}
	return "", false
}

func formatFloat(f float64, bits int) string {
	if math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, bits)
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// describe names the type of a parameter value for a message, without its
// content (which may be a secret).
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a map"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a map"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// invalid is a permanent error in a parameter; its code is the parameter's
// name.
func invalid(param, format string, args ...any) *node.Error {
	e := node.Failf(node.CategoryValidation, param, format, args...)
	e.Permanent = true
	return e
}

// unwrapPath drops the operation and path of a *fs.PathError, leaving the
// reason ("no such file or directory").
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
