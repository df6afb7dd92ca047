package workflow

import (
	"errors"
	"fmt"
	"github.com/skeinhq/skein/node"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Common fields of every node; every other key of a node is a parameter of
// its kind.
var CommonFields = []string{
	"id", "type", "name", "description", "disabled", "retries", "retry_backoff",
	"timeout", "on_error", "max_visits", "checks", "expect", "queue",
}

var topKeys = []string{
	"version", "name", "description", "inputs", "secrets", "files", "defaults", "mcp_servers",
	"llm", "limits", "evidence", "delivery", "nodes", "edges", "outputs", "record", "trace",
}

// InputTypes are the types an input may declare.
var InputTypes = []string{"string", "integer", "number", "boolean", "list", "map", "any"}

// typeAliases maps type names from other languages to input types.
var typeAliases = map[string]string{
	"int": "integer", "float": "number", "double": "number", "bool": "boolean",
	"str": "string", "text": "string", "array": "list", "object": "map", "dict": "map",
}

// notExist is the error of a file that does not exist: it says what to
// do, and is fs.ErrNotExist (errors.Is) without saying so again.
type notExist string

func (e notExist) Error() string { return string(e) }
func (e notExist) Unwrap() error { return fs.ErrNotExist }

// ReadFile reads a workflow file, refusing files over MaxFileSize before
// reading them whole, and what is not a file: opening a named pipe waits
// for a writer, so a pipe left in a folder of workflows (or named as a
// child) would hang validate, a server's listing and a node.
func ReadFile(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a file but %s; name a workflow file", path, fileKind(fi.Mode()))
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		wd, _ := os.Getwd()
		return nil, notExist(fmt.Sprintf("no such file: %s (a relative path is taken from %s); check the path, or `ls *.yaml` to see the workflow files here", path, wd))
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a folder, not a workflow file", path)
	}
	if st.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s is %s; a workflow file may be at most %s", path, byteSize(st.Size()), byteSize(MaxFileSize))
	}
	buf := make([]byte, 0, st.Size()+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > MaxFileSize {
			return nil, fmt.Errorf("%s is larger than %s, the most a workflow file may be", path, byteSize(MaxFileSize))
		}
		if err != nil {
			break
		}
	}
	return buf, nil
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Decode parses a workflow from YAML or JSON. JSON is recognised by a .json
// file name or a leading "{". Decode checks the shape of the file (keys,
// types, durations); Validate checks its meaning. The returned workflow is
// nil only when the file could not be parsed at all.
func Decode(file string, src []byte) (*Workflow, Diagnostics) {
	d := &diags{file: file}
	if len(src) > MaxFileSize {
		d.errorf(Pos{}, "", "", "the file is %s; a workflow file may be at most %s", byteSize(int64(len(src))), byteSize(MaxFileSize))
		return nil, d.list
	}
	if isBinary(src) {
		d.errorf(Pos{1, 1}, "", "", "the file is not text (it holds NUL or invalid UTF-8 bytes); a workflow file is YAML or JSON")
		return nil, d.list
	}
	var root *value
	var perr *parseError
	if strings.EqualFold(filepath.Ext(file), ".json") || looksLikeJSON(src) {
		root, perr = parseJSON(src)
		if perr != nil && !strings.EqualFold(filepath.Ext(file), ".json") {
			// A YAML flow map also starts with "{"; let the YAML parser
			// have a go before reporting the JSON error.
			if r, yerr := parseYAML(src); yerr == nil {
				root, perr = r, nil
			}
		}
	} else {
		root, perr = parseYAML(src)
	}
	if perr != nil {
		d.errorf(perr.pos, "", "", "%s", perr.msg)
		return nil, d.list
	}
	if root.kind == vNull {
		d.errorf(Pos{1, 1}, "", "", "the file holds no workflow (it is empty)")
		return nil, d.list
	}
	if root.kind != vMap {
		// Nothing of a workflow to check further: its missing version,
		// name and nodes would only say this again.
		d.errorf(root.pos, "", "", "a workflow file holds a map with version, name and nodes, not %s", article(root.kind.String()))
		return nil, d.list
	}
	if root.find("nodes") < 0 && root.find("steps") >= 0 && root.find("status") >= 0 {
		// A run's document (run.json, runs show -o json) named for its
		// workflow: every key of it would be reported unknown.
		what := "the workflow it ran"
		if i := root.find("workflow"); i >= 0 {
			if name, ok := root.keys[i].val.text(); ok {
				what = fmt.Sprintf("workflow %q, which it ran", name)
			}
		}
		d.errorf(root.pos, "", "", "this is a run's document (it has status and steps), not a workflow: name the file of %s", what)
		return nil, d.list
	}
	w := &Workflow{File: file, Source: src}
	if file != "" {
		w.dir, w.dirOf = absDir(file), file // Dir, resolved once
	}
	dec := &decoder{d: d}
	dec.workflow(w, root)
	return w, d.list
}

func isBinary(src []byte) bool {
	n := len(src)
	if n > 8192 {
		n = 8192
	}
	for _, c := range src[:n] {
		if c == 0 {
			return true
		}
	}
	return !utf8Valid(src)
}

// otherToolsKeys are the top-level keys other workflow tools use for what
// a Skein workflow calls nodes and edges.
var otherToolsKeys = map[string]string{
	"steps": "nodes", "tasks": "nodes", "jobs": "nodes", "stages": "nodes",
	"connections": "edges", "links": "edges", "transitions": "edges", "dependencies": "edges",
}

// ExtensionPrefix starts the top-level keys Skein ignores (x-defaults:),
// as Compose files have them: a place to define YAML anchors the nodes
// merge (<<: *defaults) or alias.
const ExtensionPrefix = "x-"

type decoder struct {
	d *diags
}

// fields walks a map value, calling fn for each key in known and reporting
// unknown keys with a suggestion.
func (dec *decoder) fields(v *value, path, nodeID, what string, known []string, fn func(key string, val *value, kpos Pos)) {
	for _, e := range v.keys {
		if path == "" && strings.HasPrefix(e.key, ExtensionPrefix) {
			continue // a place for anchors: Skein reads none of it
		}
		if !contains(known, e.key) {
			hint := didYouMean(e.key, known)
			if to, ok := otherToolsKeys[e.key]; ok && path == "" && contains(known, to) {
				hint = fmt.Sprintf("; a Skein workflow lists them under `%s:` (rename `%s:` to `%s:`)", to, e.key, to)
			}
			dec.d.errorf(e.keyPos, joinPath(path, e.key), nodeID, "unknown key %q in %s%s", e.key, what, hint)
			continue
		}
		fn(e.key, e.val, e.keyPos)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (dec *decoder) typeErr(v *value, path, nodeID, want string) {
	if said, ok := textForBool(v.s); ok && v.kind == vString && want == "true or false" {
		dec.d.errorf(v.pos, path, nodeID, "%s must be %s, not %s (%s)", lastKey(path), want, v.describe(), said)
		return
	}
	dec.d.errorf(v.pos, path, nodeID, "%s must be %s, not %s", lastKey(path), want, v.describe())
}

func lastKey(path string) string {
	if i := strings.LastIndexAny(path, "."); i >= 0 {
		return path[i+1:]
	}
	return path
}

func (dec *decoder) str(v *value, path, nodeID string) (string, bool) {
	if v.kind != vString {
		dec.typeErr(v, path, nodeID, "a string")
		return "", false
	}
	return v.s, true
}

func (dec *decoder) integer(v *value, path, nodeID string, lo, hi int) (int, bool) {
	if v.kind != vInt {
		dec.typeErr(v, path, nodeID, "a whole number")
		return 0, false
	}
	if v.i < int64(lo) || v.i > int64(hi) {
		dec.d.errorf(v.pos, path, nodeID, "%s must be between %d and %d, not %d", lastKey(path), lo, hi, v.i)
		return 0, false
	}
	return int(v.i), true
}

func (dec *decoder) boolean(v *value, path, nodeID string) (bool, bool) {
	if v.kind != vBool {
		dec.typeErr(v, path, nodeID, "true or false")
		return false, false
	}
	return v.b, true
}

// ParseDuration reads a duration such as "1m30s", "500ms", "2h" or "2d";
// a bare number is a number of seconds. It is node.ParseDuration, the one
// duration parser validation and kinds share.
func ParseDuration(s string) (time.Duration, error) { return node.ParseDuration(s) }

func (dec *decoder) duration(v *value, path, nodeID string) (time.Duration, bool) {
	var s string
	switch v.kind {
	case vString:
		s = v.s
	case vInt, vFloat:
		s, _ = v.text()
	default:
		dec.typeErr(v, path, nodeID, "a duration such as 30s")
		return 0, false
	}
	dur, err := ParseDuration(s)
	if err != nil {
		dec.d.errorf(v.pos, path, nodeID, "bad duration for %s: %v", lastKey(path), err)
		return 0, false
	}
	return dur, true
}

func (dec *decoder) strings(v *value, path, nodeID string) ([]string, bool) {
	if v.kind != vList {
		dec.typeErr(v, path, nodeID, "a list of strings")
		return nil, false
	}
	out := make([]string, 0, len(v.list))
	ok := true
	for i, e := range v.list {
		s, isText := e.text()
		if !isText {
			dec.typeErr(e, fmt.Sprintf("%s[%d]", path, i), nodeID, "a string")
			ok = false
			continue
		}
		out = append(out, s)
	}
	return out, ok
}

func (dec *decoder) stringMap(v *value, path, nodeID string) (map[string]string, bool) {
	if v.kind != vMap {
		dec.typeErr(v, path, nodeID, "a map of strings")
		return nil, false
	}
	out := make(map[string]string, len(v.keys))
	for _, e := range v.keys {
		s, ok := e.val.text()
		if !ok {
			dec.typeErr(e.val, joinPath(path, e.key), nodeID, "a string")
			continue
		}
		out[e.key] = s
	}
	return out, true
}

func (dec *decoder) workflow(w *Workflow, root *value) {
	w.pos = map[string]Pos{}
	dec.fields(root, "", "", "the workflow", topKeys, func(key string, v *value, kpos Pos) {
		w.pos[key] = kpos
		switch key {
		case "version":
			if n, ok := dec.integer(v, key, "", 0, 1<<30); ok {
				w.Version = n
			}
		case "name":
			w.Name, _ = dec.str(v, key, "")
		case "description":
			w.Description, _ = dec.str(v, key, "")
		case "record":
			w.Record, _ = dec.boolean(v, key, "")
		case "trace":
			if s, ok := dec.str(v, key, ""); ok {
				t, err := ParseTrace(s)
				if err != nil {
					dec.d.errorf(v.pos, key, "", "%v: run writes the run's run.json and events.jsonl; nodes also writes each node's run.json and events.jsonl in its folder", err)
					return
				}
				w.Trace = t
			}
		case "inputs":
			dec.inputs(w, v)
		case "secrets":
			w.Secrets, _ = dec.strings(v, key, "")
		case "files":
			dec.files(w, v)
		case "defaults":
			dec.defaults(w, v)
		case "mcp_servers":
			dec.mcpServers(w, v)
		case "llm":
			dec.llm(w, v)
		case "limits":
			dec.limits(w, v)
		case "evidence":
			dec.evidence(w, v)
		case "delivery":
			dec.delivery(w, v)
		case "nodes":
			dec.nodes(w, v)
		case "edges":
			dec.edges(w, v)
		case "outputs":
			if v.kind != vMap {
				dec.typeErr(v, key, "", "a map of names to templates")
				return
			}
			for _, e := range v.keys {
				if strings.TrimSpace(e.key) == "" {
					dec.d.errorf(e.keyPos, key, "", "an output needs a name: the key a run's outputs give it under")
					continue
				}
				w.Outputs = append(w.Outputs, &Output{Name: e.key, Value: e.val.plain(), Pos: e.val.pos, raw: e.val})
			}
		}
	})
	w.Defaults.OnError = orDefault(w.Defaults.OnError, OnErrorFail)
	if _, ok := w.pos["defaults"]; !ok {
		w.Defaults.RetryBackoff = time.Second
		w.Defaults.Timeout = 5 * time.Minute
		w.Defaults.MaxVisits = 10
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (dec *decoder) files(w *Workflow, v *value) {
	if v.kind != vList {
		dec.typeErr(v, "files", "", "a list of folder paths, such as [./assets]")
		return
	}
	for i, e := range v.list {
		s, ok := e.text()
		if !ok {
			dec.typeErr(e, fmt.Sprintf("files[%d]", i), "", "a folder path")
			continue
		}
		w.Files = append(w.Files, &FilesFolder{Path: s, Pos: e.pos})
	}
}

func (dec *decoder) inputs(w *Workflow, v *value) {
	if v.kind != vMap {
		dec.typeErr(v, "inputs", "", "a map of input names to {type, required, default}")
		return
	}
	for _, e := range v.keys {
		in := &Input{Name: e.key, Type: "string", Pos: e.keyPos}
		path := "inputs." + e.key
		typePos := e.val.pos
		switch e.val.kind {
		case vString: // shorthand: `city: string`
			in.Type = e.val.s
		case vNull:
		case vMap:
			dec.fields(e.val, path, "", "input "+strconv.Quote(e.key), []string{"type", "required", "default", "description", "enum"}, func(k string, fv *value, _ Pos) {
				switch k {
				case "type":
					in.Type, _ = dec.str(fv, path+".type", "")
					typePos = fv.pos
				case "required":
					in.Required, _ = dec.boolean(fv, path+".required", "")
				case "default":
					in.Default = fv.plain()
				case "description":
					in.Description, _ = dec.str(fv, path+".description", "")
				case "enum":
					if fv.kind != vList {
						dec.typeErr(fv, path+".enum", "", "a list")
						return
					}
					if len(fv.list) == 0 {
						dec.d.errorf(fv.pos, path+".enum", "", "input %q has an empty enum, which allows no value; list the values it may take, or remove enum", e.key)
						return
					}
					in.Enum, _ = fv.plain().([]any)
				}
			})
		default:
			dec.typeErr(e.val, path, "", "a map {type, required, default}")
		}
		if !contains(InputTypes, in.Type) {
			hint := didYouMean(in.Type, InputTypes)
			if alias, ok := typeAliases[strings.ToLower(in.Type)]; ok {
				hint = fmt.Sprintf("; did you mean %q?", alias)
			}
			dec.d.errorf(typePos, path+".type", "", "input %q has unknown type %q%s (types: %s)", e.key, in.Type, hint, strings.Join(InputTypes, ", "))
		}
		w.Inputs = append(w.Inputs, in)
	}
}

func (dec *decoder) defaults(w *Workflow, v *value) {
	w.Defaults = Defaults{RetryBackoff: time.Second, Timeout: 5 * time.Minute, MaxVisits: 10}
	if v.kind != vMap {
		dec.typeErr(v, "defaults", "", "a map")
		return
	}
	dec.fields(v, "defaults", "", "defaults", []string{"retries", "retry_backoff", "timeout", "max_visits", "on_error"}, func(k string, fv *value, _ Pos) {
		path := "defaults." + k
		switch k {
		case "retries":
			w.Defaults.Retries, _ = dec.integer(fv, path, "", 0, 10)
		case "retry_backoff":
			w.Defaults.RetryBackoff, _ = dec.duration(fv, path, "")
		case "timeout":
			w.Defaults.Timeout, _ = dec.duration(fv, path, "")
		case "max_visits":
			w.Defaults.MaxVisits, _ = dec.integer(fv, path, "", math.MinInt32, math.MaxInt32) // validate checks the range
		case "on_error":
			w.Defaults.OnError = dec.onError(fv, path, "")
		}
	})
}

func (dec *decoder) onError(v *value, path, nodeID string) string {
	s, ok := dec.str(v, path, nodeID)
	if !ok {
		return ""
	}
	opts := []string{OnErrorFail, OnErrorContinue, OnErrorRoute}
	if !contains(opts, s) {
		dec.d.errorf(v.pos, path, nodeID, "on_error must be fail, continue or route, not %q%s", s, didYouMean(s, opts))
		return ""
	}
	return s
}

func (dec *decoder) mcpServers(w *Workflow, v *value) {
	if v.kind != vMap {
		dec.typeErr(v, "mcp_servers", "", "a map of server names to {command, args} or {url}")
		return
	}
	for _, e := range v.keys {
		s := &MCPServer{Name: e.key, Pos: e.keyPos}
		path := "mcp_servers." + e.key
		if e.val.kind != vMap {
			dec.typeErr(e.val, path, "", "a map {command, args} or {url}")
			continue
		}
		dec.fields(e.val, path, "", "MCP server "+strconv.Quote(e.key), []string{"command", "args", "env", "cwd", "url", "headers"}, func(k string, fv *value, _ Pos) {
			p := path + "." + k
			switch k {
			case "command":
				s.Command, _ = dec.str(fv, p, "")
			case "args":
				s.Args, _ = dec.strings(fv, p, "")
			case "env":
				s.Env, _ = dec.stringMap(fv, p, "")
			case "cwd":
				s.Cwd, _ = dec.str(fv, p, "")
			case "url":
				s.URL, _ = dec.str(fv, p, "")
			case "headers":
				s.Headers, _ = dec.stringMap(fv, p, "")
			}
		})
		if (s.Command == "") == (s.URL == "") {
			dec.d.errorf(e.keyPos, path, "", "MCP server %q needs either command (stdio) or url (streamable HTTP), not both or neither", e.key)
		}
		w.MCPServers = append(w.MCPServers, s)
	}
}

// providerNames are the LLM providers registered with RegisterProvider.
var providerNames struct {
	sync.RWMutex
	list []string
}

// RegisterProvider declares an LLM provider name that llm: entries may use.
// The LLM client package calls it for every provider it registers, so
// validation knows exactly the providers this build speaks to.
func RegisterProvider(name string) {
	providerNames.Lock()
	defer providerNames.Unlock()
	if !contains(providerNames.list, name) {
		providerNames.list = append(providerNames.list, name)
		sort.Strings(providerNames.list)
	}
}

// Providers lists the registered LLM providers, sorted. When none is
// registered (a program that decodes workflows without the LLM client),
// provider names are not checked.
func Providers() []string {
	providerNames.RLock()
	defer providerNames.RUnlock()
	return append([]string(nil), providerNames.list...)
}

func (dec *decoder) llm(w *Workflow, v *value) {
	if v.kind != vMap {
		dec.typeErr(v, "llm", "", "a map of model names to {provider, model}")
		return
	}
	for _, e := range v.keys {
		l := &LLMConfig{Name: e.key, Pos: e.keyPos}
		path := "llm." + e.key
		if e.val.kind != vMap {
			dec.typeErr(e.val, path, "", "a map {provider, model}")
			continue
		}
		dec.fields(e.val, path, "", "model "+strconv.Quote(e.key), []string{"provider", "model", "base_url", "api_key", "headers", "temperature", "max_tokens", "stream", "price"}, func(k string, fv *value, _ Pos) {
			p := path + "." + k
			switch k {
			case "provider":
				l.Provider, _ = dec.str(fv, p, "")
				if known := Providers(); l.Provider != "" && len(known) > 0 && !contains(known, l.Provider) {
					dec.d.errorf(fv.pos, p, "", "unknown provider %q%s (providers: %s; any OpenAI-compatible server uses openai with base_url)", l.Provider, didYouMean(l.Provider, known), strings.Join(known, ", "))
				}
			case "model":
				l.Model, _ = dec.str(fv, p, "")
			case "base_url":
				l.BaseURL, _ = dec.str(fv, p, "")
			case "api_key":
				l.APIKey, _ = dec.str(fv, p, "")
			case "headers":
				l.Headers, _ = dec.stringMap(fv, p, "")
			case "temperature":
				if fv.kind != vInt && fv.kind != vFloat {
					dec.typeErr(fv, p, "", "a number")
					return
				}
				t := fv.f
				if fv.kind == vInt {
					t = float64(fv.i)
				}
				l.Temperature = &t
			case "max_tokens":
				l.MaxTokens, _ = dec.integer(fv, p, "", 1, 10_000_000)
			case "stream":
				if b, ok := dec.boolean(fv, p, ""); ok {
					l.Stream = &b
				}
			case "price":
				l.Price = dec.price(fv, p)
			}
		})
		w.LLM = append(w.LLM, l)
	}
}

// price reads a model's price: {input_per_mtok, output_per_mtok}, US
// dollars per million tokens.
func (dec *decoder) price(v *value, path string) *Price {
	if v.kind != vMap {
		dec.typeErr(v, path, "", "a map {input_per_mtok, output_per_mtok}")
		return nil
	}
	pr := &Price{}
	dec.fields(v, path, "", path, []string{"input_per_mtok", "output_per_mtok"}, func(k string, fv *value, _ Pos) {
		var f float64
		switch fv.kind {
		case vInt:
			f = float64(fv.i)
		case vFloat:
			f = fv.f
		default:
			dec.typeErr(fv, path+"."+k, "", "a number of US dollars per million tokens")
			return
		}
		if f < 0 || f > 1e6 {
			dec.d.errorf(fv.pos, path+"."+k, "", "%s must be between 0 and 1000000 (US dollars per million tokens)", path+"."+k)
			return
		}
		if k == "input_per_mtok" {
			pr.InputPerMTok = f
		} else {
			pr.OutputPerMTok = f
		}
	})
	return pr
}

func (dec *decoder) limits(w *Workflow, v *value) {
	if v.kind != vMap {
		dec.typeErr(v, "limits", "", "a map {max_tokens, max_cost_usd, max_output_memory}")
		return
	}
	dec.fields(v, "limits", "", "limits", []string{"max_tokens", "max_cost_usd", "max_output_memory"}, func(k string, fv *value, _ Pos) {
		switch k {
		case "max_output_memory":
			w.Limits.MaxOutputMemory, _ = dec.byteSize(fv, "limits.max_output_memory", MinOutputMemory, MaxOutputMemory)
		case "max_tokens":
			w.Limits.MaxTokens, _ = dec.integer(fv, "limits.max_tokens", "", 0, 1<<40)
		case "max_cost_usd":
			switch fv.kind {
			case vInt:
				w.Limits.MaxCostUSD = float64(fv.i)
			case vFloat:
				w.Limits.MaxCostUSD = fv.f
			default:
				dec.typeErr(fv, "limits.max_cost_usd", "", "a number")
			}
			if w.Limits.MaxCostUSD < 0 {
				dec.d.errorf(fv.pos, "limits.max_cost_usd", "", "limits: max_cost_usd is %g; give a number of US dollars, more than 0 (0 or leaving it out: no limit)", w.Limits.MaxCostUSD)
				w.Limits.MaxCostUSD = 0
			}
		}
	})
}

func (dec *decoder) evidence(w *Workflow, v *value) {
	if v.kind != vMap {
		dec.typeErr(v, "evidence", "", "a map {server, tool, arguments}")
		return
	}
	ev := &Evidence{Pos: v.pos}
	dec.fields(v, "evidence", "", "evidence", []string{"server", "tool", "arguments"}, func(k string, fv *value, _ Pos) {
		switch k {
		case "server":
			ev.Server, _ = dec.str(fv, "evidence.server", "")
		case "tool":
			ev.Tool, _ = dec.str(fv, "evidence.tool", "")
		case "arguments":
			if fv.kind != vMap {
				dec.typeErr(fv, "evidence.arguments", "", "a map")
				return
			}
			ev.Arguments, _ = fv.plain().(map[string]any)
		}
	})
	w.Evidence = ev
}

func (dec *decoder) nodes(w *Workflow, v *value) {
	if v.kind != vList {
		dec.typeErr(v, "nodes", "", "a list of nodes")
		return
	}
	if len(v.list) > MaxNodes {
		dec.d.errorf(v.pos, "nodes", "", "the workflow has %d nodes; the limit is %d", len(v.list), MaxNodes)
		return
	}
	w.Nodes = make([]*Node, 0, len(v.list))
	// The nodes live in one block, and paths such as nodes[3].type are
	// built only for a message: a node costs a handful of allocations
	// fewer (BenchmarkDecodeYAML10k).
	block := make([]Node, len(v.list))
	// A long list is decoded in parts on the other cores, each part's
	// nodes and diagnostics then taken in the list's order: the same as
	// decoded in one go.
	parts := min(runtime.GOMAXPROCS(0), len(v.list)/nodesPart)
	if parts < 2 {
		w.Nodes = dec.nodeRange(w.Nodes, v.list, block, 0)
		return
	}
	type part struct {
		nodes []*Node
		d     diags
	}
	done := make([]part, parts)
	var wg sync.WaitGroup
	for k := range done {
		from, to := k*len(v.list)/parts, (k+1)*len(v.list)/parts
		wg.Go(func() {
			p := &done[k]
			p.d.file = dec.d.file
			sub := &decoder{d: &p.d}
			p.nodes = sub.nodeRange(make([]*Node, 0, to-from), v.list[from:to], block[from:to], from)
		})
	}
	wg.Wait()
	for _, p := range done {
		w.Nodes = append(w.Nodes, p.nodes...)
		dec.d.list = append(dec.d.list, p.d.list...)
	}
}

// nodesPart is the fewest nodes nodes decodes in a goroutine of their own.
const nodesPart = 256

// nodeRange decodes the node values list, the nodes from index first of
// the workflow's list, into block, appending them to out.
func (dec *decoder) nodeRange(out []*Node, list []*value, block []Node, first int) []*Node {
	for j, nv := range list {
		i := first + j
		if nv.kind != vMap {
			dec.typeErr(nv, nodePath(i), "", "a map with id and type")
			continue
		}
		n := &block[j]
		*n = Node{Pos: nv.pos, raw: nv}
		if idv, ok := nv.get("id"); ok {
			n.ID, _ = idv.text()
		}
		for _, e := range nv.keys {
			fv := e.val
			if fv.kind == vString {
				// The fields that take a string, when they hold one.
				switch e.key {
				case "id":
					continue
				case "type":
					if n.Type = fv.s; n.Type == "" {
						dec.d.errorf(fv.pos, nodePath(i)+".type", n.ID, "node type is empty (give its kind, e.g. type: shell)")
					}
					continue
				case "name":
					n.Name = fv.s
					continue
				case "description":
					n.Description = fv.s
					continue
				case "expect":
					n.Expect = fv.s
					continue
				case "queue":
					n.Queue = fv.s
					continue
				}
			}
			if !contains(CommonFields, e.key) {
				if n.Params == nil {
					n.Params = make(map[string]any, len(nv.keys))
				}
				n.Params[e.key] = fv.plain()
				continue
			}
			p := nodePath(i) + "." + e.key
			switch e.key {
			case "id":
				if _, ok := dec.str(fv, p, ""); !ok {
					n.ID = ""
				}
			case "type":
				n.Type, _ = dec.str(fv, p, n.ID)
			case "name":
				n.Name, _ = dec.str(fv, p, n.ID)
			case "description":
				n.Description, _ = dec.str(fv, p, n.ID)
			case "disabled":
				n.Disabled, _ = dec.boolean(fv, p, n.ID)
			case "retries":
				if r, ok := dec.integer(fv, p, n.ID, 0, 10); ok {
					n.Retries = &r
				}
			case "retry_backoff":
				if dur, ok := dec.duration(fv, p, n.ID); ok {
					n.RetryBackoff = &dur
				}
			case "timeout":
				if dur, ok := dec.duration(fv, p, n.ID); ok {
					n.Timeout = &dur
				}
			case "on_error":
				n.OnError = dec.onError(fv, p, n.ID)
			case "max_visits":
				if r, ok := dec.integer(fv, p, n.ID, math.MinInt32, math.MaxInt32); ok { // validate checks the range
					n.MaxVisits = &r
				}
			case "checks":
				dec.checks(n, fv, p)
			case "expect":
				n.Expect, _ = dec.str(fv, p, n.ID)
			case "queue":
				n.Queue, _ = dec.str(fv, p, n.ID)
			}
		}
		if idv, ok := nv.get("id"); !ok {
			dec.d.errorf(nv.pos, nodePath(i), "", "node has no id (add `id: <name>`, e.g. id: fetch_%d)", i)
		} else if n.ID == "" && idv.kind == vString {
			dec.d.errorf(idv.pos, nodePath(i)+".id", "", "node id is empty (give the node an id, e.g. id: fetch_%d)", i)
		}
		if _, ok := nv.get("type"); !ok {
			dec.d.errorf(nv.pos, nodePath(i), n.ID, "node has no type (add `type: <kind>`, e.g. type: shell)")
		}
		out = append(out, n)
	}
	return out
}

func nodePath(i int) string { return "nodes[" + strconv.Itoa(i) + "]" }

// CheckTypes are the check types a node's checks may use, with the
// parameters each takes besides name, type and on_fail.
var CheckTypes = map[string][]string{
	"expr":           {"expr"},
	"contains":       {"value", "target"},
	"not_contains":   {"value", "target"},
	"regex":          {"pattern", "target"},
	"json_schema":    {"schema", "target"},
	"http_status":    {"status"},
	"file_exists":    {"path"},
	"text_present":   {"text"},
	"text_absent":    {"text"},
	"template_found": {"template"},
	"window_title":   {"title"},
}

func checkTypeNames() []string {
	names := make([]string, 0, len(CheckTypes))
	for k := range CheckTypes {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (dec *decoder) checks(n *Node, v *value, path string) {
	if v.kind != vList {
		dec.typeErr(v, path, n.ID, "a list of checks")
		return
	}
	for i, cv := range v.list {
		p := fmt.Sprintf("%s[%d]", path, i)
		if cv.kind != vMap {
			dec.typeErr(cv, p, n.ID, "a map {name, type, ...}")
			continue
		}
		c := &Check{Pos: cv.pos}
		if tv, ok := cv.get("type"); ok {
			c.Type, _ = dec.str(tv, p+".type", n.ID)
		} else {
			dec.d.errorf(cv.pos, p, n.ID, "check has no type (one of %s)", strings.Join(checkTypeNames(), ", "))
			continue
		}
		params, known := CheckTypes[c.Type]
		if !known {
			tv, _ := cv.get("type")
			dec.d.errorf(tv.pos, p+".type", n.ID, "unknown check type %q%s", c.Type, didYouMean(c.Type, checkTypeNames()))
			continue
		}
		keys := append([]string{"name", "type", "on_fail"}, params...)
		dec.fields(cv, p, n.ID, c.Type+" check", keys, func(k string, fv *value, _ Pos) {
			switch k {
			case "type":
			case "name":
				c.Name, _ = dec.str(fv, p+".name", n.ID)
			case "on_fail":
				if s, ok := dec.str(fv, p+".on_fail", n.ID); ok {
					if s != "fail" && s != "warn" {
						dec.d.errorf(fv.pos, p+".on_fail", n.ID, "on_fail must be fail or warn, not %q", s)
					}
					c.OnFail = s
				}
			case "expr":
				c.Expr, _ = dec.str(fv, p+".expr", n.ID)
			default:
				if c.Params == nil {
					c.Params = map[string]any{}
				}
				c.Params[k] = fv.plain()
			}
		})
		if c.OnFail == "" {
			c.OnFail = "fail"
		}
		if c.Name == "" {
			c.Name = fmt.Sprintf("%s #%d", c.Type, i+1)
		}
		for _, req := range params[:1] {
			if req == "target" {
				continue
			}
			if _, ok := cv.get(req); !ok {
				dec.d.errorf(cv.pos, p, n.ID, "%s check %q needs %s", c.Type, c.Name, req)
			}
		}
		n.Checks = append(n.Checks, c)
	}
}

func (dec *decoder) edges(w *Workflow, v *value) {
	if v.kind != vList {
		dec.typeErr(v, "edges", "", "a list of {from, to, on}")
		return
	}
	w.Edges = make([]*Edge, 0, len(v.list))
	block := make([]Edge, len(v.list)) // one allocation for all edges
	for i, ev := range v.list {
		if ev.kind != vMap {
			dec.typeErr(ev, edgePath(i), "", "a map {from, to, on}")
			continue
		}
		e := &block[i]
		*e = Edge{Pos: ev.pos}
		for _, f := range ev.keys {
			switch f.key {
			case "from":
				e.From = f.val.s
				if f.val.kind != vString {
					e.From, _ = dec.str(f.val, edgePath(i)+".from", "")
				}
				e.fromPos = f.val.pos
			case "to":
				e.To = f.val.s
				if f.val.kind != vString {
					e.To, _ = dec.str(f.val, edgePath(i)+".to", "")
				}
				e.toPos = f.val.pos
			case "on":
				if f.val.kind == vNull {
					continue
				}
				e.onPos = f.val.pos
				s, ok := f.val.text()
				if !ok {
					dec.typeErr(f.val, edgePath(i)+".on", "", "a handle name")
				}
				e.On = s
			default:
				dec.d.errorf(f.keyPos, edgePath(i)+"."+f.key, "", "unknown key %q in an edge%s", f.key, didYouMean(f.key, []string{"from", "to", "on"}))
			}
		}
		if _, ok := ev.get("from"); !ok {
			dec.d.errorf(ev.pos, edgePath(i), "", "edge has no from")
		}
		if _, ok := ev.get("to"); !ok {
			dec.d.errorf(ev.pos, edgePath(i), "", "edge has no to")
		}
		w.Edges = append(w.Edges, e)
	}
}

// fileKind names the kind of a file that is neither regular nor a folder.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}
