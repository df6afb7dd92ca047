package llm

import (
	"fmt"
	"mime"
	"path/filepath"

	"github.com/skeinhq/skein/node"
)

// ReadImages reads the image files named by a list of paths, or of entries
// {path, mime} of an mcp node's images output, through a run's file-access
// policy: a path from an upstream output is read only when it lies in the
// run's folder or a folder of files:. param names the list in errors. An
// image's MIME type comes from its file's extension (image/png when that
// says nothing).
func ReadImages(files *node.Files, param string, v any) ([]Image, error) {
	list, _ := v.([]any)
	var out []Image
	for i, p := range list {
		var path string
		switch x := p.(type) {
		case string:
			path = x
		case map[string]any: // an entry of an mcp node's images output
			path, _ = x["path"].(string)
		}
		if path == "" {
			continue
		}
		data, err := files.Read(path)
		if err != nil {
			e := node.AsError(err)
			e.Message = fmt.Sprintf("%s[%d]: %s", param, i, e.Message)
			return nil, e
		}
		mt := mime.TypeByExtension(filepath.Ext(path))
		if mt == "" {
			mt = "image/png"
		}
		out = append(out, Image{MIME: mt, Data: data})
	}
	return out, nil
}
