// Package web is the run viewer that `skein serve` shows at /: a page
// that lists runs, draws a run's graph with live node badges, shows each
// step's parameters, output, error and events, and cancels, resumes,
// re-runs and approves runs through the HTTP API.
//
// The page is built from the sources in web/ of the repository (make web:
// esbuild bundles them) into assets/, which is committed and embedded, so
// the binary needs no Node.js and the page loads nothing from elsewhere.
// assets/manifest.json holds a hash of the sources; TestAssetsFresh fails
// when the embedded assets were built from other sources.
//
// The page signs in with an API token, which the server keeps in an
// HttpOnly, SameSite=Strict cookie (internal/server, session.go); this
// package only serves the files.
package web
