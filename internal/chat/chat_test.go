package chat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
)

func TestReply(t *testing.T) {
	text, ok, err := Reply(&store.Run{Status: engine.RunCompleted, Outputs: map[string]any{"reply": "Hello Ada."}})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "Hello Ada.", text)

	text, ok, err = Reply(&store.Run{Status: engine.RunCompleted, Outputs: map[string]any{"reply": map[string]any{"a": 1}}})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, `{"a":1}`, text, "an object reply is compact JSON")

	_, ok, err = Reply(&store.Run{Status: engine.RunRunning, Outputs: map[string]any{"reply": "not yet"}})
	require.NoError(t, err)
	require.False(t, ok, "a run that has not completed has no reply")

	_, ok, err = Reply(&store.Run{Status: engine.RunCompleted, Outputs: map[string]any{}})
	require.NoError(t, err)
	require.False(t, ok, "a run without an output reply has none")
}
