package queue

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/skeinhq/skein/internal/redact"
)

// Sealed history events.
//
// A run's history holds what its nodes were given and returned, unmasked:
// a later node's templates read those values on whichever worker runs it.
// An event whose body holds a value of one of the run's secrets (a header
// rendered with a token, a node that echoes one) is stored sealed instead:
// encrypted (AES-256-GCM) with a key derived from the run's secret values,
// which every worker of the run has and the database does not. Its task
// and timer stay readable, for the queries that look for them.

// sealer seals and opens the history events of one run; nil for a run
// with no secrets. Its cipher is made when an event first needs it: most
// runs with secrets (a webhook's signing key) never store one in an
// event, and a server starting hundreds of them a second would otherwise
// derive a key for each.
type sealer struct {
	red  *redact.Redactor
	key  []byte
	once sync.Once
	aead cipher.AEAD // made by cipher
	err  error
}

// cipher returns the run's cipher, made on the first call.
func (s *sealer) cipher() (cipher.AEAD, error) {
	s.once.Do(func() {
		var block cipher.Block
		if block, s.err = aes.NewCipher(s.key); s.err == nil {
			s.aead, s.err = cipher.NewGCM(block)
		}
	})
	return s.aead, s.err
}

// newSealer returns the sealer of a run with these secret values.
func newSealer(secrets map[string]string, red *redact.Redactor) *sealer {
	if len(secrets) == 0 || red == nil {
		return nil
	}
	names := make([]string, 0, len(secrets))
	for k := range secrets {
		names = append(names, k)
	}
	slices.Sort(names)
	h := sha256.New()
	h.Write([]byte("skein queue history v1\x00"))
	for _, k := range names {
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(secrets[k]), secrets[k])
	}
	return &sealer{red: red, key: h.Sum(nil)}
}

// sealedBody is how a sealed event is stored.
type sealedBody struct {
	Task   int64  `json:"task,omitempty"`
	Timer  int64  `json:"timer,omitempty"`
	Sealed []byte `json:"sealed"`
}

// seal returns raw as it is stored: sealed when it holds a secret.
func (s *sealer) seal(raw []byte, task, timer int64) ([]byte, error) {
	if s == nil || !s.red.Contains(string(raw)) {
		return raw, nil
	}
	aead, err := s.cipher()
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return json.Marshal(sealedBody{Task: task, Timer: timer, Sealed: aead.Seal(nonce, nonce, raw, nil)})
}

// errOtherSecrets: a sealed event does not open with this worker's
// secrets.
var errOtherSecrets = errors.New("it was sealed with secret values this worker does not have: give every worker of the run the same secrets")

// open returns the body of a stored event: raw itself, or what it seals.
func (s *sealer) open(raw []byte) ([]byte, error) {
	var sb sealedBody
	if err := json.Unmarshal(raw, &sb); err != nil || sb.Sealed == nil {
		return raw, nil // not sealed
	}
	if s == nil {
		return nil, errOtherSecrets
	}
	aead, err := s.cipher()
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	if len(sb.Sealed) < n {
		return nil, errOtherSecrets
	}
	plain, err := aead.Open(nil, sb.Sealed[:n], sb.Sealed[n:], nil)
	if err != nil {
		return nil, errOtherSecrets
	}
	return plain, nil
}
