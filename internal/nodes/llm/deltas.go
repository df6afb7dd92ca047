package llm

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/node"
)

// A streamed reply's text goes out as llm_delta events ({text: the new
// piece}) while the node runs: the first piece at once, then at most one
// event every deltaEvery, or sooner when deltaChars characters wait. An
// event ends at a blank (the last word waits for the next one, or for the
// reply's end), so a secret the model repeats is masked whole.
const (
	deltaEvery = 100 * time.Millisecond
	deltaChars = 200
)

// deltas throttles the text of one model call into llm_delta events.
type deltas struct {
	c       *node.Call
	pending strings.Builder
	last    time.Time
	sent    bool
}

// stream sets req up to stream (when the node's stream param allows)
// with its text going out as llm_delta events, and returns the function
// that sends what is left once the reply is whole.
func stream(c *node.Call, req *llm.Request) (flush func()) {
	if on, ok := c.Params["stream"].(bool); ok && !on {
		return func() {}
	}
	d := &deltas{c: c}
	req.Stream = true
	req.OnText = d.add
	return func() { d.emit(true) }
}

func (d *deltas) add(piece string) {
	d.pending.WriteString(piece)
	if d.sent && d.c.Now().Sub(d.last) < deltaEvery && d.pending.Len() < deltaChars {
		return
	}
	d.emit(false)
}

// emit sends what waits, up to its last blank unless the reply is whole.
func (d *deltas) emit(whole bool) {
	text := d.pending.String()
	rest := ""
	if !whole {
		i := strings.LastIndexFunc(text, unicode.IsSpace)
		if i < 0 {
			return
		}
		_, n := utf8.DecodeRuneInString(text[i:])
		text, rest = text[:i+n], text[i+n:]
	}
	d.pending.Reset()
	d.pending.WriteString(rest)
	if text == "" {
		return
	}
	d.c.Emit("llm_delta", map[string]any{"text": d.c.Redact(text)})
	d.last, d.sent = d.c.Now(), true
}
