package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/auth"
)

// TestWorkflowSchema: GET /api/schema/workflow answers, to a read token,
// the published workflow JSON Schema, in which a node's parameters follow
// its type; without a token it is refused.
func TestWorkflowSchema(t *testing.T) {
	t.Parallel()
	e := newEditor(t)
	status, hdr, body := e.do(auth.Read, "GET", "/api/schema/workflow", "")
	require.Equal(t, http.StatusOK, status, string(body))
	require.Equal(t, "application/schema+json", hdr.Get("Content-Type"))
	published, err := os.ReadFile("../../schema/workflow.schema.json")
	require.NoError(t, err)
	require.JSONEq(t, string(published), string(body), "the schema the server runs with is the published one")

	var doc struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
			AllOf []struct {
				If struct {
					Properties map[string]struct {
						Const string `json:"const"`
					} `json:"properties"`
				} `json:"if"`
				Then struct {
					Ref string `json:"$ref"`
				} `json:"then"`
			} `json:"allOf"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	require.NotEmpty(t, doc.Defs["kind.shell"].Properties["command"].Description, "a shell node's command is described")
	then := map[string]string{}
	for _, b := range doc.Defs["node"].AllOf {
		then[b.If.Properties["type"].Const] = b.Then.Ref
	}
	require.Equal(t, "#/$defs/kind.shell", then["shell"], "a node of type shell takes the shell kind's parameters")

	req, err := http.NewRequest("GET", e.url+"/api/schema/workflow", nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "a token is needed")
}
