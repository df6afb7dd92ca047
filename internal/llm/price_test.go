package llm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCost(t *testing.T) {
	t.Parallel()
	u := Usage{InputTokens: 1_000_000, OutputTokens: 500_000, TotalTokens: 1_500_000}
	tests := []struct {
		name      string
		model     string
		overrides map[string]Price
		want      float64
		known     bool
	}{
		{"built in", "gpt-4.1-mini", nil, 0.40 + 0.80, true},
		{"dated OpenAI name", "gpt-4o-2024-08-06", nil, 2.50 + 5.00, true},
		{"dated Anthropic name", "claude-sonnet-4-5-20250929", nil, 3.00 + 7.50, true},
		{"vendor prefix", "anthropic/claude-haiku-4-5", nil, 1.00 + 2.50, true},
		{"case and space", " GPT-4o-mini ", nil, 0.15 + 0.30, true},
		{"a longer name is another model", "gpt-4.1-nano", nil, 0, false},
		{"unknown", "llama3.2", nil, 0, false},
		{"override wins", "gpt-4.1", map[string]Price{"gpt-4.1": {InputPerMTok: 1, OutputPerMTok: 2}}, 1 + 1, true},
		{"override prices a local model", "llama3.2", map[string]Price{"llama3.2": {}}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, known := Cost(tt.model, u, tt.overrides)
			require.Equal(t, tt.known, known)
			require.InDelta(t, tt.want, got, 1e-9)
		})
	}
}

func TestPricesIsACopy(t *testing.T) {
	t.Parallel()
	p := Prices()
	p["gpt-4o"] = Price{}
	got, _ := PriceOf("gpt-4o", nil)
	require.Equal(t, 2.50, got.InputPerMTok)
}

func ExampleCost() {
	usd, known := Cost("claude-sonnet-4-5", Usage{InputTokens: 20_000, OutputTokens: 1_000}, nil)
	fmt.Printf("$%.4f %v\n", usd, known)
	usd, known = Cost("my-local-model", Usage{InputTokens: 20_000}, nil)
	fmt.Printf("$%.4f %v\n", usd, known)
	// Output:
	// $0.0750 true
	// $0.0000 false
}
