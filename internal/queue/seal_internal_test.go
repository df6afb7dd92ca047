package queue

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/redact"
)

// TestSealerMakesItsCipherWhenNeeded: a run's events that hold none of its
// secrets are stored as they are and make no cipher; the first that holds
// one is sealed, and opens again with the secret's value.
func TestSealerMakesItsCipherWhenNeeded(t *testing.T) {
	secrets := map[string]string{"HOOK_SECRET": "whsec-1234567890"}
	s := newSealer(secrets, redact.New(secrets))
	plain := []byte(`{"output":{"body":"hello"}}`)
	stored, err := s.seal(plain, 1, 0)
	require.NoError(t, err)
	require.Equal(t, plain, stored)
	require.Nil(t, s.aead, "no cipher for an event without a secret")

	secret := []byte(`{"output":{"body":"whsec-1234567890"}}`)
	stored, err = s.seal(secret, 2, 0)
	require.NoError(t, err)
	require.NotNil(t, s.aead)
	require.NotContains(t, string(stored), "whsec-1234567890")
	opened, err := newSealer(secrets, redact.New(secrets)).open(stored)
	require.NoError(t, err)
	require.Equal(t, secret, opened)

	_, err = newSealer(map[string]string{"HOOK_SECRET": "another"}, redact.New(map[string]string{"HOOK_SECRET": "another"})).open(stored)
	require.ErrorIs(t, err, errOtherSecrets)
}
