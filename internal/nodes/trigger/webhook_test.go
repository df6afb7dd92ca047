package trigger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/nodes/trigger"
)

func TestParseWebhook(t *testing.T) {
	t.Parallel()
	hmac := map[string]any{"type": "hmac", "secret": "{{ secrets.S }}"}
	tests := []struct {
		name    string
		params  map[string]any
		want    trigger.Hook
		errs    []string // the messages' starts, in order
		warning bool
	}{
		{
			name:   "defaults",
			params: map[string]any{"auth": hmac},
			want: trigger.Hook{Path: "hook", Method: "POST", Auth: "hmac", Secret: "{{ secrets.S }}", MaxBody: 1 << 20,
				Respond: "accepted", RespondTimeout: 30 * time.Second},
		},
		{
			name: "everything set",
			params: map[string]any{"path": "deploy-v2", "method": "put", "auth": map[string]any{"type": "bearer", "secret": "x", "header": "X-Token"},
				"max_body": "64KiB", "respond": "on_finish", "respond_timeout": "5s"},
			want: trigger.Hook{Path: "deploy-v2", Method: "PUT", Auth: "bearer", Secret: "x", Header: "X-Token", MaxBody: 64 << 10,
				Respond: "on_finish", RespondTimeout: 5 * time.Second},
		},
		{
			name:   "a size in bytes",
			params: map[string]any{"auth": map[string]any{"type": "none"}, "max_body": 2048},
			want:   trigger.Hook{Path: "hook", Method: "POST", Auth: "none", MaxBody: 2048, Respond: "accepted", RespondTimeout: 30 * time.Second},
		},
		{name: "no auth is a warning", params: map[string]any{}, errs: []string{"the hook has no auth"}, warning: true},
		{name: "a null auth is no auth", params: map[string]any{"auth": nil}, errs: []string{"the hook has no auth"}, warning: true},
		{name: "auth that is not a map", params: map[string]any{"auth": "bearer"}, errs: []string{"auth must be a map"}},
		{name: "secret missing", params: map[string]any{"auth": map[string]any{"type": "bearer"}}, errs: []string{"auth type bearer needs a secret"}},
		{name: "none with a secret", params: map[string]any{"auth": map[string]any{"type": "none", "secret": "x"}}, errs: []string{"auth type none takes no secret"}},
		{name: "hmac with a header", params: map[string]any{"auth": map[string]any{"type": "hmac", "secret": "x", "header": "X-Sig"}}, errs: []string{"auth type hmac reads the Standard Webhooks headers"}},
		{name: "unknown auth type", params: map[string]any{"auth": map[string]any{"type": "basic"}}, errs: []string{"auth.type must be"}},
		{name: "unknown auth key", params: map[string]any{"auth": map[string]any{"type": "none", "user": "x"}}, errs: []string{"unknown key user"}},
		{name: "path with a slash", params: map[string]any{"auth": hmac, "path": "a/b"}, errs: []string{"path \"a/b\" must be one URL segment"}},
		{name: "body limit not a size", params: map[string]any{"auth": hmac, "max_body": "lots"}, errs: []string{"max_body \"lots\" is not a size"}},
		{name: "body limit too large", params: map[string]any{"auth": hmac, "max_body": "1GiB"}, errs: []string{"max_body must be from 1 byte to 16 MiB"}},
		{name: "timeout too long", params: map[string]any{"auth": hmac, "respond_timeout": "1h"}, errs: []string{"respond_timeout must be more than 0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, errs := trigger.ParseWebhook("hook", tc.params)
			require.Len(t, errs, len(tc.errs), "%v", errs)
			for i, e := range errs {
				require.Contains(t, e.Message, tc.errs[i])
				require.Equal(t, tc.warning, e.Warning)
			}
			if len(tc.errs) == 0 {
				require.Equal(t, tc.want, h)
			}
		})
	}
}
