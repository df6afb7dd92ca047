package expr_test

import (
	"fmt"

	"github.com/skeinhq/skein/expr"
)

func ExampleTemplate_Render() {
	scope := &expr.Scope{
		Inputs: map[string]any{"city": "Paris"},
		Nodes: map[string]any{
			// A tool returned a list; Normalize makes it an output object.
			"forecast": expr.Normalize([]any{
				map[string]any{"day": "Mon", "rain": 0.7},
				map[string]any{"day": "Tue", "rain": 0.1},
			}),
		},
	}

	text, _ := expr.ParseTemplate("{{ forecast.count }} days for {{ inputs.city }}, first: {{ forecast.day }}")
	out, _ := text.Render(scope)
	fmt.Printf("%q\n", out)

	// A template that is one expression keeps the value's type.
	days, _ := expr.ParseTemplate("{{ map(forecast.items, .day) }}")
	out, _ = days.Render(scope)
	fmt.Printf("%#v\n", out)
	// Output:
	// "2 days for Paris, first: Mon"
	// []interface {}{"Mon", "Tue"}
}

func ExampleReferences() {
	refs, _ := expr.References(`any(forecast.body.days, .rain > 0.5) && inputs["city"] != ""`)
	for _, r := range refs {
		fmt.Println(r.Root, r.Path, r.Offset)
	}
	// Output:
	// forecast [body days] 4
	// inputs [city] 40
}

func ExampleProgram_EvalBool() {
	cond, _ := expr.Compile("fetch.status == 200 && !later.success")
	ok, _ := cond.EvalBool(&expr.Scope{
		Nodes: map[string]any{"fetch": map[string]any{"status": 200, "success": true}},
	})
	fmt.Println(ok) // later has not run: later.success is nil, !nil is true
	// Output: true
}
