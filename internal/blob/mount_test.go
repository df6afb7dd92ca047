package blob_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
)

// asked is a mounted backend that answers Open with err once told to,
// having said it was asked.
type asked struct {
	kind   string
	asked  chan struct{}
	answer chan error
}

func (a *asked) Kind() string                                   { return a.kind }
func (a *asked) Stage() (*os.File, error)                       { return nil, errors.ErrUnsupported }
func (a *asked) Keep(context.Context, string, *blob.Blob) error { return errors.ErrUnsupported }
func (a *asked) Has(context.Context, *blob.Blob) (bool, error)  { return false, nil }
func (a *asked) Path(string) string                             { return "" }
func (a *asked) Open(context.Context, string) (io.ReadCloser, error) {
	if a.asked != nil {
		close(a.asked)
	}
	return nil, <-a.answer
}

// A reference is read through every mounted backend of its kind: one that
// fails while still mounted makes the read fail with its error, but one
// unmounted while it was asked (its store closing under another test or
// a worker's shutdown) does not count — another's "not found" stands.
func TestMountedBackendGoneWhileAsked(t *testing.T) {
	for _, unmountFirst := range []bool{true, false} {
		kind := "test-gone"
		if !unmountFirst {
			kind = "test-kept"
		}
		closing := &asked{kind: kind, asked: make(chan struct{}), answer: make(chan error, 1)}
		empty := &asked{kind: kind, answer: make(chan error, 1)}
		empty.answer <- blob.ErrNotFound
		unmountClosing := blob.Mount(closing)
		defer blob.Mount(empty)()
		ref, ok := blob.FromRef(map[string]any{blob.Key: map[string]any{
			"sha256": strings.Repeat("ab", 32), "size": 3, "type": blob.Text, "store": kind}})
		require.True(t, ok)
		done := make(chan error, 1)
		go func() { _, err := ref.Load(); done <- err }()
		<-closing.asked
		if unmountFirst {
			unmountClosing()
		}
		closing.answer <- errors.New("failed to connect: context canceled")
		err := <-done
		unmountClosing()
		if unmountFirst {
			require.ErrorIs(t, err, blob.ErrNotFound)
		} else {
			require.ErrorContains(t, err, "context canceled")
			require.NotErrorIs(t, err, blob.ErrNotFound)
		}
	}
}
