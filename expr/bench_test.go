package expr

import (
	"fmt"
	"testing"
)

func BenchmarkReferences(b *testing.B) {
	for _, bm := range []struct{ name, code string }{
		{name: "member chain", code: " fetch.body.items[0].name "},
		{name: "condition", code: `any(forecast.body.days, .rain > 0.5) && inputs.city != "" && fetch.status == 200`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := References(bm.code); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidationPass is what workflow validation does for a 10,000-node
// workflow with one template per node: scan it, then find its references.
func BenchmarkValidationPass(b *testing.B) {
	templates := make([]string, 10_000)
	for i := range templates {
		templates[i] = fmt.Sprintf("https://api.example.com/{{ node%d.body.items[0].name }}?q={{ inputs.city }}", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range templates {
			t, err := ParseTemplate(s)
			if err != nil {
				b.Fatal(err)
			}
			for _, seg := range t.Segments() {
				if _, err := References(seg.Code); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

func BenchmarkParseTemplate(b *testing.B) {
	for _, bm := range []struct{ name, src string }{
		{name: "static", src: "https://api.example.com/forecast?days=3&units=metric"},
		{name: "single", src: "{{ fetch.body.items[0].name }}"},
		{name: "mixed", src: `Weather for {{ inputs.city }}: {{ forecast.body.summary }} ({{ join(map(forecast.body.days, .label), ", ") }})`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseTemplate(bm.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRender(b *testing.B) {
	s := testScope()
	for _, bm := range []struct{ name, src string }{
		{name: "single", src: "{{ fetch.body.items[0].name }}"},
		{name: "typed list", src: "{{ inputs.tags }}"},
		{name: "mixed", src: "Weather in {{ inputs.city }} for {{ inputs.days }} days: {{ fetch.body.items[0] }}"},
		{name: "predicate", src: "{{ any(fetch.body.items, .rain > 0.5) }}"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			t, err := ParseTemplate(bm.src)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := t.Render(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("render value", func(b *testing.B) {
		v := map[string]any{
			"url":     "https://x/?city={{ inputs.city }}",
			"headers": map[string]any{"Authorization": "Bearer {{ secrets.K }}"},
			"days":    "{{ inputs.days }}",
			"method":  "GET",
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := RenderValue(v, s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compile(`any(forecast.body.days, .rain > 0.5) && inputs.city != ""`); err != nil {
			b.Fatal(err)
		}
	}
}
