package engine_test

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// TestRedactorMasksEncodedSecrets: a secret a program prints encoded on
// its own — base64, URL-encoded, hex — is masked like the plain one.
func TestRedactorMasksEncodedSecrets(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t/t0ken+value?"
	redact := engine.Redactor(map[string]string{"TOKEN": secret, "PIN": "4242"})
	b := []byte(secret)
	for _, tc := range []struct{ name, form string }{
		{"plain", secret},
		{"base64", base64.StdEncoding.EncodeToString(b)},
		{"base64 raw", base64.RawStdEncoding.EncodeToString(b)},
		{"base64 url", base64.URLEncoding.EncodeToString(b)},
		{"base64 url raw", base64.RawURLEncoding.EncodeToString(b)},
		{"query escaped", url.QueryEscape(secret)},
		{"path escaped", url.PathEscape(secret)},
		{"hex", hex.EncodeToString(b)},
		{"HEX", strings.ToUpper(hex.EncodeToString(b))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := redact("Authorization: " + tc.form + "\n")
			require.Equal(t, "Authorization: ***\n", got)
			require.NotContains(t, got, tc.form)
		})
	}
	require.Equal(t, "pin *** hex 34323432", redact("pin 4242 hex 34323432"),
		"a short secret is masked as written, not in its encodings (they would mask unrelated text)")
	require.Equal(t, "nothing secret", redact("nothing secret"))
}
