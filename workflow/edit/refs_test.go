package edit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/skeinhq/skein/workflow/edit"
)

// renameFlow names fetch in every kind of place a reference can be: the
// lines marked "# ref" hold one, written as old; every other line must
// come out of a rename as it went in.
const renameFlow = `version: 1
name: refs
outputs:
  status: "{{ old.status }}"                     # ref
  other: "{{ oldest.x }} and old"                # a longer name; the word old is text
nodes:
  - {id: start, type: trigger.manual}
  - id: old
    type: http
    url: http://127.0.0.1:1/
  - id: oldest
    type: set
    values: {x: 1, old: 2}
  - id: branch
    type: if
    condition: old.status == 200 && oldest.x > 0 # ref
  - id: pick
    type: switch
    cases:
      - {name: ok, condition: "old.status < 300"} # ref
      - {name: other, condition: "true"}
  - id: say
    type: template
    text: |
      The status was {{ old.status }},           # ref
      and oldest says {{ oldest.x }} (old news).
    checks:
      - {name: ok, type: expr, expr: "old.status > 0"} # ref
  - id: quoted
    type: set
    values:
      a: '{{ old.body }} it''s'                  # ref
      b: "{{ old.headers[\"x\"] }}\t{{ say.text }}" # ref
      c: "{{ oldest.old }}"                       # a port named old
  - id: run
    type: shell
    command: [echo, "{{ old.body }}", old]        # ref
edges:
  - {from: start, to: old}
  - {from: old, to: oldest}
  - {from: oldest, to: branch}
  - {from: branch, to: pick, on: "true"}
  - {from: pick, to: say, on: ok}
  - {from: say, to: quoted}
  - {from: quoted, to: run}
`

// TestRenameRewritesReferences: rename_node rewrites every reference to
// the node — in templates, in expression fields, in outputs — and only
// those: a longer id, a port of the same name and the word in text stay,
// and every line without a reference is unchanged.
func TestRenameRewritesReferences(t *testing.T) {
	t.Parallel()
	out, err := edit.Apply([]byte(renameFlow), "refs.yaml", []edit.Op{{Op: "rename_node", Node: "old", To: "fetch"}})
	if err != nil {
		t.Fatal(err)
	}
	before, after := strings.Split(renameFlow, "\n"), strings.Split(string(out), "\n")
	if len(before) != len(after) {
		t.Fatalf("the rename changed the number of lines:\n%s", out)
	}
	edges := map[string]bool{"  - id: old": true, "  - {from: start, to: old}": true, "  - {from: old, to: oldest}": true}
	for i, line := range before {
		want := line
		switch {
		case strings.HasSuffix(line, "# ref"):
			// The references, and only them: old followed by a member.
			want = strings.ReplaceAll(line, "old.", "fetch.")
		case edges[line]:
			want = strings.Replace(line, "old", "fetch", 1)
			want = strings.Replace(want, "to: old}", "to: fetch}", 1)
		}
		if after[i] != want {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, after[i], want)
		}
	}
	if errs := errorsOf(t, "refs.yaml", out); len(errs) > 0 {
		t.Fatalf("the renamed file does not validate: %q\n%s", errs, out)
	}
}

// TestRenameRewritesReferencesInJSON: the same in a JSON file, where a
// string's escapes stay as they were written.
func TestRenameRewritesReferencesInJSON(t *testing.T) {
	t.Parallel()
	src := `{"version": 1, "name": "j",
 "nodes": [
  {"id": "old", "type": "set", "values": {"n": 1}},
  {"id": "b", "type": "template", "text": "\u00e9 {{ old.n }}\n"},
  {"id": "c", "type": "if", "condition": "old.n > 0"}
 ],
 "edges": [{"from": "old", "to": "b"}, {"from": "b", "to": "c"}],
 "outputs": {"n": "{{ old.n }}"}
}
`
	out, err := edit.Apply([]byte(src), "j.json", []edit.Op{{Op: "rename_node", Node: "old", To: "first"}})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(strings.ReplaceAll(src, `"old"`, `"first"`), "old.n", "first.n")
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	if errs := errorsOf(t, "j.json", out); len(errs) > 0 {
		t.Fatalf("the renamed file does not validate: %q", errs)
	}
}

// TestRenameRefusesAReferenceUnderAnAnchor: a reference in a value with
// an anchor is not rewritten in place (its aliases would change too); the
// rename is refused and the text left alone.
func TestRenameRefusesAReferenceUnderAnAnchor(t *testing.T) {
	t.Parallel()
	src := `version: 1
name: a
nodes:
  - {id: old, type: set, values: {n: 1}}
  - {id: b, type: template, text: &t "{{ old.n }}"}
edges:
  - {from: old, to: b}
`
	_, err := edit.Apply([]byte(src), "a.yaml", []edit.Op{{Op: "rename_node", Node: "old", To: "first"}})
	if !errors.Is(err, edit.ErrLayout) {
		t.Fatalf("got %v, want ErrLayout", err)
	}
}

// TestRenameWritesAgainWhatItCannotRewriteInPlace: a reference whose name
// is written with an escape is not found in the text as written; the
// value is written again, by the encoder, with the new name.
func TestRenameWritesAgainWhatItCannotRewriteInPlace(t *testing.T) {
	t.Parallel()
	src := `version: 1
name: e
nodes:
  - {id: old, type: set, values: {n: 1}}
  - {id: b, type: template, text: "{{ o\u006cd.n }}"}   # an escaped l
edges:
  - {from: old, to: b}
`
	out, err := edit.Apply([]byte(src), "e.yaml", []edit.Op{{Op: "rename_node", Node: "old", To: "first"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeOf(plain(t, out), "b")["text"]; got != "{{ first.n }}" {
		t.Fatalf("text is %q, want the reference renamed:\n%s", got, out)
	}
	if !strings.Contains(string(out), "   # an escaped l") {
		t.Fatalf("the comment after the value is gone:\n%s", out)
	}
}
