package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

//go:embed assets
var assets embed.FS

// Assets are the built files of the page: index.html, app.js, app.css and
// manifest.json.
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the folder is embedded: it is there
	}
	return sub
}

// contentSecurityPolicy lets the page load only its own files and talk
// only to its own server; inline styles are allowed for the graph's
// computed positions.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Handler serves the page: GET / is index.html, GET /assets/{file} the
// other files. Anything else is http.NotFound.
func Handler() http.Handler {
	files := Assets()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := "index.html"
		if r.URL.Path != "/" {
			name = path.Base(r.URL.Path)
			if path.Dir(r.URL.Path) != "/assets" || name == "index.html" {
				http.NotFound(w, r)
				return
			}
		}
		data, err := fs.ReadFile(files, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		switch path.Ext(name) {
		case ".html":
			h.Set("Content-Type", "text/html; charset=utf-8")
		case ".js":
			h.Set("Content-Type", "text/javascript; charset=utf-8")
		case ".css":
			h.Set("Content-Type", "text/css; charset=utf-8")
		case ".json":
			h.Set("Content-Type", "application/json")
		}
		_, _ = w.Write(data)
	})
}
