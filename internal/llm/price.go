package llm

import (
	"maps"
	"regexp"
	"strings"
	"sync"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
}

// builtinPrices are list prices of common models (USD per million tokens,
// standard tier, no caching discounts). Workflows and deployments override
// them; a model not here costs 0 and is reported as unknown. The table is
// built on first use, by a run that prices a model.
var builtinPrices = sync.OnceValue(func() map[string]Price {
	return map[string]Price{
		"gpt-4.1":           {InputPerMTok: 2.00, OutputPerMTok: 8.00},
		"gpt-4.1-mini":      {InputPerMTok: 0.40, OutputPerMTok: 1.60},
		"gpt-4o":            {InputPerMTok: 2.50, OutputPerMTok: 10.00},
		"gpt-4o-mini":       {InputPerMTok: 0.15, OutputPerMTok: 0.60},
		"claude-sonnet-4-5": {InputPerMTok: 3.00, OutputPerMTok: 15.00},
		"claude-haiku-4-5":  {InputPerMTok: 1.00, OutputPerMTok: 5.00},
		"claude-opus-4-1":   {InputPerMTok: 15.00, OutputPerMTok: 75.00},
	}
})

// Prices returns a copy of the built-in price table.
func Prices() map[string]Price { return maps.Clone(builtinPrices()) }

// PriceOf finds a model's price: overrides first, then the built-in table.
// A name is tried as given, then without a "vendor/" prefix (OpenRouter
// style), then without a date suffix (gpt-4o-2024-08-06,
// claude-sonnet-4-5-20250929) or "-latest".
func PriceOf(model string, overrides map[string]Price) (Price, bool) {
	for _, name := range priceNames(model) {
		if p, ok := overrides[name]; ok {
			return p, true
		}
		if p, ok := builtinPrices()[name]; ok {
			return p, true
		}
	}
	return Price{}, false
}

// Cost is what usage u of model cost in US dollars. known is false when
// the model has no price, and the cost is then 0.
func Cost(model string, u Usage, overrides map[string]Price) (usd float64, known bool) {
	p, ok := PriceOf(model, overrides)
	if !ok {
		return 0, false
	}
	return (float64(u.InputTokens)*p.InputPerMTok + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6, true
}

var dateSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$`) })

func priceNames(model string) []string {
	m := strings.ToLower(strings.TrimSpace(model))
	names := []string{m}
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
		names = append(names, m)
	}
	if d := dateSuffix().ReplaceAllString(m, ""); d != m {
		names = append(names, d)
	}
	return names
}
