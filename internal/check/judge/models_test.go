package judge_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/check/judge"
	"github.com/skeinhq/skein/internal/llm"
)

// provider is a fake llm.Provider: it answers every call with reply and
// keeps the requests.
type provider struct {
	reply *llm.Response
	mu    sync.Mutex
	reqs  []llm.Request
}

func (p *provider) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, req)
	return p.reply, nil
}

// models is a fake judge.Models: one provider and model for every name,
// and a price of $1 per token when priced.
type models struct {
	p      *provider
	model  string
	priced bool
	err    error
	asked  []string
}

func (m *models) Get(name string) (llm.Provider, string, error) {
	m.asked = append(m.asked, name)
	if m.err != nil {
		return nil, "", m.err
	}
	return m.p, m.model, nil
}

func (m *models) Cost(_ string, u llm.Usage) (float64, bool) {
	if !m.priced {
		return 0, false
	}
	return float64(u.TotalTokens), true
}

func (m *models) Unpriced(name, model, consequence string) string {
	return "model " + model + " (" + name + ") has no price, so " + consequence
}

// TestJudgeOverAnyModels drives the judge through its Models interface
// with a fake provider: it asks for the judge model, sends the checks,
// and returns the verdicts with the usage priced by Models — or, for a
// model without a price, a warning that its cost counts as $0; a model
// that cannot be had fails the call before anything is sent.
func TestJudgeOverAnyModels(t *testing.T) {
	t.Parallel()
	reply := &llm.Response{
		Text:  `{"verdicts": [{"check_name": "expect", "verdict": "pass", "reasoning": "it says hello"}]}`,
		Usage: llm.Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10},
	}
	req := check.JudgeRequest{Node: "greet", Output: map[string]any{"text": "hello"},
		Checks: []check.JudgeCheck{{Name: "expect", Type: "expect", Text: "a greeting"}}}
	for _, tc := range []struct {
		name    string
		models  *models
		usage   check.Usage
		wantErr string
	}{
		{name: "a priced model", models: &models{p: &provider{reply: reply}, model: "m1", priced: true},
			usage: check.Usage{Tokens: 10, CostUSD: 10}},
		{name: "a model without a price", models: &models{p: &provider{reply: reply}, model: "m2"},
			usage: check.Usage{Tokens: 10, Warnings: []string{"the judge's model m2 (judge) has no price, so its cost counts as $0"}}},
		{name: "no model to be had", models: &models{p: &provider{reply: reply}, err: errors.New("model judge: no API key")},
			wantErr: "model judge: no API key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := &judge.LLM{Models: tc.models}
			got, used, err := j.JudgeMetered(context.Background(), req)
			require.Equal(t, []string{"judge"}, tc.models.asked, "the judge asks for the judge model")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Empty(t, tc.models.p.reqs, "nothing is sent")
				return
			}
			require.NoError(t, err)
			require.Equal(t, []check.JudgeVerdict{{CheckName: "expect", Verdict: "pass", Reasoning: "it says hello"}}, got)
			require.Equal(t, tc.usage, used)
			require.Len(t, tc.models.p.reqs, 1)
			sent := tc.models.p.reqs[0]
			require.Equal(t, tc.models.model, sent.Model)
			prompt := sent.Messages[len(sent.Messages)-1].Content
			require.Contains(t, prompt, `"greet"`)
			require.Contains(t, prompt, "- expect: a greeting")
		})
	}
}
