package engine

import (
	"fmt"
	"maps"
	"unicode/utf8"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/node"
)

// Keep moves the big values of a task's outcome — its output, the
// variables it sets (_state_patch) and its parameters — to st, before the
// step that refers to them is recorded, so that the scheduler, the step
// records and the store hold references to them (DESIGN §7). Both drivers
// call it on the task's goroutine: the local driver with its run folder's
// store and the run's memory budget, the queue's workers with the shared
// store and no budget (nil: each value above blob.InlineLimit moves). A
// foreach's items stay a list, the scheduler walks it. Failing to write
// them fails the attempt: the outcome's output is dropped and, unless the
// kind failed already, its error says why. A nil st keeps nothing.
func Keep(st *blob.Store, mem *blob.Budget, pn *PlanNode, oc Outcome, params map[string]any) (Outcome, map[string]any) {
	if st == nil {
		return oc, params
	}
	var only []string
	if pn.IsForEach() {
		only = []string{"items"}
	}
	fail := func(err error) (Outcome, map[string]any) {
		if oc.Err == nil {
			oc.Err = &node.Error{Code: "big_value", Category: node.CategoryInternal, Err: err,
				Message: fmt.Sprintf("keeping its output: %v", err)}
		}
		oc.Output = nil
		return oc, params
	}
	out, err := st.SpillWithin(mem, oc.Output, only...)
	if err != nil {
		return fail(err)
	}
	oc.Output = out
	if patch, ok := oc.Directives["_state_patch"].(map[string]any); ok {
		p, err := st.SpillWithin(mem, patch)
		if err != nil {
			return fail(err)
		}
		if len(p) > 0 {
			d := maps.Clone(oc.Directives)
			d["_state_patch"] = p
			oc.Directives = d
		}
	}
	p, err := st.SpillWithin(mem, params)
	if err != nil {
		return fail(err)
	}
	return oc, p
}

// KeepOutputs moves the big values of a run's final outputs (a template
// that builds a long text) to st. Failing to write them fails the run: the
// error is what the run ends with, unless it failed already, and the
// outputs are returned as they were. A nil st keeps nothing.
func KeepOutputs(st *blob.Store, outs map[string]any) (map[string]any, *node.Error) {
	if st == nil {
		return outs, nil
	}
	o, _, err := st.Spill(outs, blob.InlineLimit)
	if err != nil {
		return outs, &node.Error{Code: "big_value", Category: node.CategoryInternal, Message: "keeping the run's outputs: " + err.Error()}
	}
	return o, nil
}

// MaxMessage is how many characters of an error's message a step keeps.
const MaxMessage = 2000

// KeepMessage bounds the message of a task's error: one longer than
// MaxMessage characters is cut there, after red masked its secrets, and
// the whole masked text is kept in a blob of st — the message then ends
// with "… (cut; whole message in blob <file>)" and details.message_blob
// refers to the blob. Both drivers call it with Keep. The error is copied,
// never changed; a shorter message, or a nil st, is left as it is.
func KeepMessage(st *blob.Store, red *redact.Redactor, oc Outcome) Outcome {
	e := oc.Err
	if st == nil || e == nil || utf8.RuneCountInString(e.Message) <= MaxMessage {
		return oc
	}
	whole := red.String(e.Message)
	c := *e
	c.Details = maps.Clone(e.Details)
	if c.Details == nil {
		c.Details = map[string]any{}
	}
	cut, n := whole, 0
	for i := range whole {
		if n == MaxMessage {
			cut = whole[:i]
			break
		}
		n++
	}
	v, err := st.Put(whole)
	b, ok := v.(*blob.Blob)
	switch {
	case err != nil:
		c.Message = fmt.Sprintf("%s… (cut; the whole message was not kept: %v)", cut, err)
	case !ok:
		c.Message = cut + "… (cut; the whole message holds a secret value and was not kept)"
	default:
		ref := b.Path()
		if ref == "" {
			ref = b.Digest() + " of the " + b.Store() + " store"
		}
		c.Message = fmt.Sprintf("%s… (cut; whole message in blob %s)", cut, ref)
		c.Details["message_blob"] = b
	}
	oc.Err = &c
	return oc
}
