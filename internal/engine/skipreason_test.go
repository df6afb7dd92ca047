package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// TestSkipReasons: every skipped step says why it did not run.
func TestSkipReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  string
		// drive runs the scenario to its end.
		drive func(s *sim)
		want  map[string]string
	}{
		{
			name: "a branch not taken",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: gate, type: if, condition: "false"}
  - {id: yes, type: act}
  - {id: after_yes, type: act}
  - {id: no, type: act}
edges:
  - {from: start, to: gate}
  - {from: gate, to: yes, on: "true"}
  - {from: yes, to: after_yes}
  - {from: gate, to: no, on: "false"}
`,
			drive: func(s *sim) { s.start(""); s.drain() },
			want:  map[string]string{"yes": engine.SkipDeadPath, "after_yes": engine.SkipDeadPath},
		},
		{
			name: "disabled",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: off, type: act, disabled: true}
  - {id: after, type: act}
edges:
  - {from: start, to: off}
  - {from: off, to: after}
`,
			drive: func(s *sim) { s.start(""); s.drain() },
			want:  map[string]string{"off": engine.SkipDisabled},
		},
		{
			name: "cancelled",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: busy, type: act}
  - {id: after, type: act}
edges:
  - {from: start, to: busy}
  - {from: busy, to: after}
`,
			drive: func(s *sim) {
				s.start("")
				s.apply(s.run.Cancel())
				s.drain()
			},
			want: map[string]string{"after": engine.SkipCancelled},
		},
		{
			name: "the run failed",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: broken, type: act, fail: -1}
  - {id: after, type: act}
edges:
  - {from: start, to: broken}
  - {from: broken, to: after}
`,
			drive: func(s *sim) { s.start(""); s.drain() },
			want:  map[string]string{"after": engine.SkipRunFailed},
		},
		{
			name: "a foreach item failed",
			src: `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: each, type: foreach, items: "{{ [1, 2] }}"}
  - {id: check, type: act, fail: -1, on_error: continue}
  - {id: note, type: act}
  - {id: next, type: endloop, loop: each}
edges:
  - {from: start, to: each}
  - {from: each, to: check, on: body}
  - {from: check, to: note}
  - {from: note, to: next}
`,
			drive: func(s *sim) { s.start(""); s.drain() },
			want:  map[string]string{"note": engine.SkipItemFailed, "next": engine.SkipItemFailed},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, tc.src)
			tc.drive(s)
			require.NotNil(t, s.done, "the run ended")
			got := map[string]string{}
			for _, st := range s.steps {
				if st.Status == engine.StatusSkipped {
					got[st.Node] = st.SkipReason
				} else {
					require.Empty(t, st.SkipReason, "%s is %s: it has no skip reason", st.Node, st.Status)
				}
			}
			require.Equal(t, tc.want, got, s.dump())
		})
	}
}
