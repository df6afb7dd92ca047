package shell

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"slices"
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

// parseParams reads the parameters, which the engine has coerced to their
// declared types (node.Param.Coerce) with defaults filled in; what is left
// to check is what the types do not say. Its errors are permanent: the
// same parameters fail the same way on every attempt.
func parseParams(call *node.Call) (*config, error) {
	c := &config{maxOutput: DefaultMaxOutput, allowFailure: call.Bool("allow_failure")}
	sh := call.Bool("shell")
	c.checkOptions = !sh && !call.Bool("allow_option_args")
	var err error
	if c.argv, err = argv(call.Params["command"], sh); err != nil {
		return nil, err
	}
	c.label = fmt.Sprintf("command %q", c.argv[0])
	if sh {
		c.label = "shell command"
	}
	if c.env, c.path, err = environ(call.Map("env")); err != nil {
		return nil, err
	}
	if s := call.String("cwd"); s != "" {
		fi, err := os.Stat(s)
		switch {
		case err != nil:
			return nil, invalid("cwd", "cwd %q: %v", s, unwrapPath(err))
		case !fi.IsDir():
			return nil, invalid("cwd", "cwd %q is not a folder", s)
		}
		c.cwd = s
	}
	if call.Has("stdin") {
		s := call.String("stdin") // a list or map was coerced to its JSON
		c.stdin = &s
	}
	if n, ok := call.Int("max_output"); ok {
		if n < 0 {
			return nil, invalid("max_output", "max_output is %d; give a number of bytes (0 or more)", n)
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
		s, ok := text(e)
		if !ok {
			return nil, invalid("command", "argument %d of command is %s; every element must be a string, number or boolean", i, describe(e))
		}
		if strings.IndexByte(s, 0) >= 0 {
			return nil, invalid("command", "argument %d of command holds a NUL byte, which no program can receive", i)
		}
		args[i] = s
	}
	if args[0] == "" {
		return nil, invalid("command", "the program (first element of command) is empty; give the program to run")
	}
	if sh {
		// sh -c script $0 $1 …: the list's other elements become "$1", "$2", ….
		return append([]string{shellPath, "-c", args[0], "sh"}, args[1:]...), nil
	}
	return args, nil
}

// environ builds the child's environment from baseEnv and the env
// parameter, and returns it with the child's PATH.
func environ(m map[string]any) ([]string, string, error) {
	vars := proc.Base()
	if _, ok := vars["PATH"]; !ok {
		vars["PATH"] = defaultPath
	}
	for k, val := range m {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, "", invalid("env", "env has the name %q; a variable name must be non-empty, without '=' or NUL", k)
		}
		s, ok := "", true
		if val != nil { // null sets the variable empty
			s, ok = text(val)
		}
		if !ok {
			return nil, "", invalid("env", "env %s is %s; give a string, number or boolean", k, describe(val))
		}
		if strings.IndexByte(s, 0) >= 0 {
			return nil, "", invalid("env", "env %s holds a NUL byte", k)
		}
		vars[k] = s
	}
	env := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	return env, vars["PATH"], nil
}

// text turns a string, number or boolean into the text a program
// receives, as node.Text writes it (3, 1.5, 1000000). Null, lists and maps
// are refused.
func text(v any) (string, bool) {
	if v == nil {
		return "", false
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct, reflect.Pointer:
		return "", false
	}
	s, err := node.Text(v)
	return s, err == nil
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
