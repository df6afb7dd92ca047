package cassette

import "net/http"

// Client is an HTTP client whose requests go through t (the models' calls
// of a run that records or replays).
func (t *Tape) Client() *http.Client {
	return &http.Client{Transport: t.Transport(http.DefaultTransport)}
}
