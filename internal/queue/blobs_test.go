package queue_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// bigText is over the inline limit: it goes to the blob store.
var bigText = strings.Repeat("0123456789abcdef", 3*blob.InlineLimit/16) + "the end"

// artifact is what the producer saves in its artifacts folder.
var artifact = []byte(strings.Repeat("\x89PNG not really\x00", 5000))

// producer outputs bigText and saves artifact as report.png.
type producer struct{}

func (producer) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	if c.ArtifactDir == "" {
		return nil, node.Failf(node.CategoryExecution, "no_folder", "no artifacts folder")
	}
	// The folder is made by a kind that saves something in it.
	if err := os.MkdirAll(c.ArtifactDir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(c.ArtifactDir, "report.png")
	if err := os.WriteFile(path, artifact, 0o644); err != nil {
		return nil, err
	}
	return map[string]any{"text": bigText, "image": map[string]any{"path": path, "mime": "image/png"}}, nil
}

// consumer reports the length and digest of the text it was given whole.
type consumer struct{}

func (consumer) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	text, _ := c.Params["text"].(string)
	sum := sha256.Sum256([]byte(text))
	return map[string]any{"len": len(text), "sha256": hex.EncodeToString(sum[:])}, nil
}

const handOff = `version: 1
name: handoff
nodes:
  - {id: start, type: trigger.manual}
  - {id: produce, type: producer, queue: a}
  - {id: consume, type: consumer, queue: b, text: "{{ produce.text }}"}
edges:
  - {from: start, to: produce}
  - {from: produce, to: consume}
outputs:
  len: "{{ consume.len }}"
  text: "{{ produce.text }}"
`

// TestBigValuesCrossWorkers: a node on worker A outputs a value over the
// inline limit and saves an artifact; the next node, on worker B (another
// queue), gets the whole value, and whoever reads the run from the
// database (the server) gets the value and the artifact — through the
// database's blob table, or a folder both workers mount.
func TestBigValuesCrossWorkers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// backends returns the blob backends of worker A, worker B and
		// the reader.
		backends func(t *testing.T, st *postgres.Store) (a, b, reader blob.Backend)
		kind     string
	}{
		{
			name: "Postgres", kind: postgres.KindBlobs,
			backends: func(_ *testing.T, st *postgres.Store) (blob.Backend, blob.Backend, blob.Backend) {
				return st.Blobs(), st.Blobs(), st.Blobs()
			},
		},
		{
			name: "SharedFolder", kind: blob.KindShared,
			backends: func(t *testing.T, _ *postgres.Store) (blob.Backend, blob.Backend, blob.Backend) {
				dir := t.TempDir()
				// Each machine mounts the folder where it likes.
				mountB := filepath.Join(t.TempDir(), "mnt")
				require.NoError(t, os.Symlink(dir, mountB))
				var out [3]blob.Backend
				for i, p := range []string{dir, "file://" + mountB, dir} {
					be, err := blob.NewShared(p)
					require.NoError(t, err)
					out[i] = be
				}
				return out[0], out[1], out[2]
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st, err := postgres.Open(ctx, pgtest.URL(t))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = queue.Migrate(ctx, st.Pool())
			require.NoError(t, err)
			reg := registry()
			reg.MustRegister(node.Spec{Kind: "producer", Category: node.Action, Description: "Outputs a big text and saves an artifact."},
				func() node.Kind { return producer{} })
			reg.MustRegister(node.Spec{Kind: "consumer", Category: node.Action, Description: "Measures a text.",
				Params: []node.Param{{Name: "text", Type: node.String, Description: "The text."}}},
				func() node.Kind { return consumer{} })
			beA, beB, reader := tc.backends(t, st)
			b := &bundle{st: st, reg: reg, dir: t.TempDir()}
			b.starter, err = queue.New(queue.Config{Store: st, Registry: reg, Blobs: beA})
			require.NoError(t, err)
			for q, be := range map[string]blob.Backend{"a": beA, "b": beB} {
				d, err := queue.New(queue.Config{Store: st, Registry: reg, Blobs: be, Queues: map[string]int{q: 2},
					Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})
				require.NoError(t, err)
				wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
				done := make(chan error, 1)
				go func() { done <- d.Work(wctx, 10*time.Second) }()
				t.Cleanup(func() {
					stop()
					require.NoError(t, <-done)
				})
			}

			run := b.start(t, handOff, nil)
			done := b.wait(t, run.ID)
			require.Equal(t, "completed", string(done.Status), "%v", done.Error)
			require.EqualValues(t, len(bigText), done.Outputs["len"], "worker B got the whole value")
			out, ok := done.Outputs["text"].(*blob.Blob)
			require.True(t, ok, "a big output of the run is a reference, got %T", done.Outputs["text"])
			require.Equal(t, tc.kind, out.Store())

			steps := b.steps(t, run.ID)
			sum := sha256.Sum256([]byte(bigText))
			require.Equal(t, hex.EncodeToString(sum[:]), steps["consume"][0].Output["sha256"])

			// The reader (the server) reads the step from the database.
			defer blob.Mount(reader)()
			prod := steps["produce"][0]
			ref, ok := prod.Output["text"].(*blob.Blob)
			require.True(t, ok, "the big output is stored as a reference, got %T", prod.Output["text"])
			require.Equal(t, tc.kind, ref.Store())
			require.Empty(t, ref.Path(), "the reference names no path of worker A")
			got, err := ref.Load()
			require.NoError(t, err)
			require.Equal(t, bigText, got)

			require.Equal(t, "report.png", prod.Output["image"].(map[string]any)["path"], "the artifact's path is its name")
			arts, ok := prod.Output["_directives"].(map[string]any)[queue.ArtifactsKey].(map[string]any)
			require.True(t, ok, "the step lists its artifacts: %v", prod.Output)
			file, ok := arts["report.png"].(*blob.Blob)
			require.True(t, ok, "the artifact is a blob, got %T", arts["report.png"])
			rc, err := file.Open()
			require.NoError(t, err)
			defer rc.Close()
			data, err := io.ReadAll(rc)
			require.NoError(t, err)
			require.Equal(t, artifact, data, "the server downloads the artifact worker A saved")
		})
	}
}

// leaker saves the secret it is given in an artifact and in a big output.
type leaker struct{}

func (leaker) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	secret, _ := c.Params["secret"].(string)
	if err := os.MkdirAll(c.ArtifactDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.ArtifactDir, "leak.txt"), []byte("key="+secret), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.ArtifactDir, "fine.txt"), []byte("nothing secret"), 0o644); err != nil {
		return nil, err
	}
	return map[string]any{"text": strings.Repeat("x", 2*blob.InlineLimit) + secret}, nil
}

// TestWorkerKeepsNoSecretInBlobs: an artifact or a big output that holds a
// secret value is not written to the shared store: the artifact is left
// out with a warning, the output is recorded masked.
func TestWorkerKeepsNoSecretInBlobs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := postgres.Open(ctx, pgtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = queue.Migrate(ctx, st.Pool())
	require.NoError(t, err)
	reg := registry()
	reg.MustRegister(node.Spec{Kind: "leaker", Category: node.Action, Description: "Saves its secret.",
		Params: []node.Param{{Name: "secret", Type: node.String, Description: "The secret."}}},
		func() node.Kind { return leaker{} })
	const secret = "sk-live-7f3a9c2e51"
	secrets := func(*workflow.Workflow) (map[string]string, error) { return map[string]string{"TOKEN": secret}, nil }
	b := &bundle{st: st, reg: reg, dir: t.TempDir()}
	b.starter, err = queue.New(queue.Config{Store: st, Registry: reg, Secrets: secrets})
	require.NoError(t, err)
	d, err := queue.New(queue.Config{Store: st, Registry: reg, Secrets: secrets, Queues: map[string]int{queue.DefaultQueue: 2},
		Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})
	require.NoError(t, err)
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- d.Work(wctx, 10*time.Second) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})

	run := b.start(t, `version: 1
name: leak
secrets: [TOKEN]
nodes:
  - {id: leak, type: leaker, secret: "{{ secrets.TOKEN }}"}
`, nil)
	require.Equal(t, "completed", string(b.wait(t, run.ID).Status))
	step := b.steps(t, run.ID)["leak"][0]
	require.True(t, step.Masked, "the output held the secret: it is recorded masked")
	arts := step.Output["_directives"].(map[string]any)[queue.ArtifactsKey].(map[string]any)
	require.Contains(t, arts, "fine.txt")
	require.NotContains(t, arts, "leak.txt", "an artifact holding a secret is not kept")

	var n int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM blob_chunks WHERE position($1::bytea IN data) > 0`, []byte(secret)).Scan(&n))
	require.Zero(t, n, "no blob holds the secret")
	// Nor any table: the history's events that held it are sealed.
	for _, table := range []string{"skein_queue_log", "steps", "events", "runs"} {
		require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table+` t WHERE position($1 IN t::text) > 0`, secret).Scan(&n))
		require.Zero(t, n, "table %s holds the secret", table)
	}
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM skein_queue_log WHERE run_id = $1 AND body::jsonb ? 'sealed'`, run.ID).Scan(&n))
	require.Positive(t, n, "the history events that held the secret are sealed")
	evs, err := st.Events(ctx, run.ID, 0, 1000)
	require.NoError(t, err)
	warned := false
	for _, ev := range evs {
		if ev.Type == "warning" && strings.Contains(fmt.Sprint(ev.Data["message"]), "leak.txt") {
			warned = true
		}
	}
	require.True(t, warned, "a warning names the artifact left out")
}

// TestSealedHistoryOpensOnEveryWorker: a node's output that holds a secret
// is sealed in the run's history, and a worker that did not run it (its
// state rebuilt from the history) still reads the true value.
func TestSealedHistoryOpensOnEveryWorker(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	const secret = "sk-live-1b2c3d4e5f"
	work := func(queueName, value string) {
		b.work(t, queue.Config{Queues: map[string]int{queueName: 2}, Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond,
			Secrets: func(*workflow.Workflow) (map[string]string, error) { return map[string]string{"TOKEN": value}, nil }})
	}
	flow := `version: 1
name: sealed
secrets: [TOKEN]
nodes:
  - {id: first, type: set, values: {token: "{{ secrets.TOKEN }}"}}
  - {id: second, type: set, queue: other, values: {same: "{{ first.token == secrets.TOKEN }}"}}
edges:
  - {from: first, to: second}
outputs:
  same: "{{ second.same }}"
`
	work(queue.DefaultQueue, secret)
	work("other", secret)
	b.starter, _ = queue.New(queue.Config{Store: b.st, Registry: b.reg,
		Secrets: func(*workflow.Workflow) (map[string]string, error) { return map[string]string{"TOKEN": secret}, nil }})
	run := b.start(t, flow, nil)
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	require.Equal(t, true, done.Outputs["same"], "the other worker read the sealed output")
}

// TestABigTriggerPayloadIsKeptInTheBlobStore: an input (or a webhook body,
// a chat history: the trigger's payload) over the inline limit goes to the
// shared blob store when the run starts, before the history and the
// trigger's step refer to it; a node on a worker reads it whole.
func TestABigTriggerPayloadIsKeptInTheBlobStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := postgres.Open(ctx, pgtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = queue.Migrate(ctx, st.Pool())
	require.NoError(t, err)
	reg := registry()
	reg.MustRegister(node.Spec{Kind: "consumer", Category: node.Action, Description: "Measures a text.",
		Params: []node.Param{{Name: "text", Type: node.String, Description: "The text."}}},
		func() node.Kind { return consumer{} })
	b := &bundle{st: st, reg: reg, dir: t.TempDir()}
	b.starter, err = queue.New(queue.Config{Store: st, Registry: reg})
	require.NoError(t, err)
	d, err := queue.New(queue.Config{Store: st, Registry: reg, Queues: map[string]int{queue.DefaultQueue: 2},
		Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond})
	require.NoError(t, err)
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- d.Work(wctx, 10*time.Second) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})

	run := b.start(t, `version: 1
name: payload
inputs:
  text: {type: string}
nodes:
  - {id: start, type: trigger.manual}
  - {id: consume, type: consumer, text: "{{ start.text }}"}
edges:
  - {from: start, to: consume}
`, map[string]any{"text": bigText})
	end := b.wait(t, run.ID)
	require.Equal(t, "completed", string(end.Status), "%v", end.Error)
	steps := b.steps(t, run.ID)
	sum := sha256.Sum256([]byte(bigText))
	require.Equal(t, hex.EncodeToString(sum[:]), steps["consume"][0].Output["sha256"], "the worker read the input whole")
	ref, ok := steps["start"][0].Output["text"].(*blob.Blob)
	require.True(t, ok, "the trigger's big output is a reference, got %T", steps["start"][0].Output["text"])
	require.Equal(t, postgres.KindBlobs, ref.Store())
	require.Equal(t, hex.EncodeToString(sum[:]), ref.Digest())
	var longest int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT max(octet_length(body::text)) FROM skein_queue_log WHERE run_id = $1`, run.ID).Scan(&longest))
	require.Less(t, longest, blob.InlineLimit, "no history event holds the input")
}

// TestLongErrorMessageIsCut: on the queue too, an error message over
// 2,000 characters is stored cut there, naming the blob of the shared
// store that keeps the whole of it.
func TestLongErrorMessageIsCut(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	run := b.start(t, `version: 1
name: loud
nodes:
  - {id: loud, type: fail, message: "{{ repeat('x', 5000) }}"}
`, nil)
	end := b.wait(t, run.ID)
	require.Equal(t, "failed", string(end.Status))
	e := b.steps(t, run.ID)["loud"][0].Error
	require.NotNil(t, e)
	kept, marker, ok := strings.Cut(e.Message, "… (cut; whole message in blob ")
	require.True(t, ok, "the message says it was cut: %.80q…", e.Message)
	require.Equal(t, strings.Repeat("x", engine.MaxMessage), kept)
	ref, ok := e.Details["message_blob"].(*blob.Blob)
	require.True(t, ok, "details.message_blob: %#v", e.Details["message_blob"])
	require.Equal(t, postgres.KindBlobs, ref.Store())
	require.Equal(t, int64(5000), ref.Size())
	require.Contains(t, marker, ref.Digest())
	require.Contains(t, end.Error.Message, "… (cut; whole message in blob ", "the run's error is the cut one")
}
