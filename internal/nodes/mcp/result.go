package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/node"
)

// eventTextLimit is how much of a result's text a tool_result event keeps.
const eventTextLimit = 2 << 10

// summary is what events and errors need of a result.
type summary struct {
	text   string // the text parts, joined by newlines
	images int
	links  int // resource links
}

func readResult(res *sdk.CallToolResult) summary {
	var s summary
	var texts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			texts = append(texts, c.Text)
		case *sdk.ImageContent:
			s.images++
		case *sdk.ResourceLink:
			s.links++
		}
	}
	s.text = strings.Join(texts, "\n")
	return s
}

// output turns a successful result into the node's output, writing its
// binary parts under dir.
func output(res *sdk.CallToolResult, text, dir, tool string) (map[string]any, error) {
	var out map[string]any
	switch {
	case res.StructuredContent != nil:
		v, ok := plainJSON(res.StructuredContent)
		if !ok {
			return nil, node.Failf(node.CategoryExecution, "bad_result", "tool %q returned structured content that is not JSON", tool)
		}
		out = expr.Normalize(v)
	default:
		if v, ok := node.ParseJSON([]byte(text)); ok {
			out = expr.Normalize(v)
		} else {
			out = map[string]any{"text": text}
		}
	}
	saver := &artifacts{dir: dir, tool: safeName(tool)}
	var images, audio, resources, links []any
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.ImageContent:
			item, err := saver.save(c.Data, c.MIMEType)
			if err != nil {
				return nil, err
			}
			images = append(images, item)
		case *sdk.AudioContent:
			item, err := saver.save(c.Data, c.MIMEType)
			if err != nil {
				return nil, err
			}
			audio = append(audio, item)
		case *sdk.EmbeddedResource:
			r := c.Resource
			if r == nil {
				continue
			}
			var item map[string]any
			if r.Blob != nil {
				var err error
				if item, err = saver.save(r.Blob, r.MIMEType); err != nil {
					return nil, err
				}
			} else {
				item = map[string]any{"mime": r.MIMEType, "text": r.Text}
			}
			item["uri"] = r.URI
			resources = append(resources, item)
		case *sdk.ResourceLink:
			links = append(links, resourceLink(c))
		}
	}
	for k, list := range map[string][]any{"images": images, "audio": audio, "resources": resources, "resource_links": links} {
		if list != nil {
			out[k] = list
		}
	}
	return out, nil
}

// resourceLink is a link to a resource a tool answered with: {uri, name}
// and, when the server gave them, title, description, mime and size.
func resourceLink(c *sdk.ResourceLink) map[string]any {
	item := map[string]any{"uri": c.URI, "name": c.Name}
	for k, v := range map[string]string{"title": c.Title, "description": c.Description, "mime": c.MIMEType} {
		if v != "" {
			item[k] = v
		}
	}
	if c.Size != nil {
		item["size"] = *c.Size
	}
	return item
}

// artifacts writes a call's files as <tool>-<n>.<ext>, n counting up from
// 1 past any file already there, so visits and concurrent calls of one
// node never overwrite each other's files.
type artifacts struct {
	dir     string
	tool    string
	n       int  // the last number used
	scanned bool // n starts past the files already there
}

// lastNumber returns the highest n of the files named <tool>-<n>.<ext> in
// dir, or 0.
func lastNumber(dir, tool string) int {
	entries, _ := os.ReadDir(dir)
	last := 0
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), tool+"-")
		if !ok {
			continue
		}
		num, _, ok := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(num); ok && err == nil && n > last {
			last = n
		}
	}
	return last
}

// save writes data and returns its output entry {path, mime}. Without an
// artifact folder nothing is written and the entry has the size instead of
// a path.
func (a *artifacts) save(data []byte, mimeType string) (map[string]any, error) {
	if a.dir == "" {
		return map[string]any{"mime": mimeType, "size": len(data)}, nil
	}
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return nil, node.Failf(node.CategoryExecution, "artifact", "creating the artifact folder: %v", err)
	}
	if !a.scanned {
		a.n, a.scanned = lastNumber(a.dir, a.tool), true
	}
	ext := extension(mimeType)
	for {
		a.n++
		path := filepath.Join(a.dir, fmt.Sprintf("%s-%d.%s", a.tool, a.n, ext))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, node.Failf(node.CategoryExecution, "artifact", "saving %s: %v", path, err)
		}
		_, werr := f.Write(data)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, node.Failf(node.CategoryExecution, "artifact", "saving %s: %v", path, werr)
		}
		return map[string]any{"path": path, "mime": mimeType}, nil
	}
}

// extension is the file extension for a MIME type: the usual one for
// common types, else the system's first, else "bin".
func extension(mimeType string) string {
	mt, _, _ := mime.ParseMediaType(mimeType)
	switch mt {
	case "image/png":
		return "png"
	case "image/jpeg":
		return "jpg"
	case "image/gif":
		return "gif"
	case "image/webp":
		return "webp"
	case "image/svg+xml":
		return "svg"
	case "audio/wav", "audio/x-wav":
		return "wav"
	case "audio/mpeg":
		return "mp3"
	case "application/pdf":
		return "pdf"
	case "application/json":
		return "json"
	case "text/plain":
		return "txt"
	case "application/gzip":
		return "gz"
	}
	if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
		return strings.TrimPrefix(exts[0], ".")
	}
	return "bin"
}

// safeName keeps a tool name usable as a file name: letters, digits, "-",
// "_" and "." stay, anything else becomes "_".
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			b[i] = '_'
		}
	}
	name := strings.TrimLeft(string(b), ".")
	if name == "" {
		name = "tool"
	}
	return name
}

// parseJSON returns b parsed as one JSON value, with whole numbers as int
// and other numbers as float64. It reports false when b is empty or not

// plainJSON returns v, a value decoded from JSON by the SDK, with numbers
// as parseJSON gives them.
func plainJSON(v any) (any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return node.ParseJSON(b)
}

// clip returns at most n bytes of s, cut at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
