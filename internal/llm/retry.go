package llm

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/skeinhq/skein/node"
)

// Retry defaults.
const (
	DefaultMaxRetries = 3
	DefaultMaxWait    = time.Minute
)

// RetryPolicy says how a provider retries rate limits (429) and server
// errors (5xx). Other errors are never retried in process; 401 and 403
// never at all. The SDKs' own retries are off: their waits cannot be
// observed or cancelled the way the engine needs.
type RetryPolicy struct {
	// MaxRetries is how many more attempts follow the first: 0 means
	// DefaultMaxRetries, a negative number none.
	MaxRetries int
	// MaxWait is the longest Retry-After waited for in process; a reply
	// asking for longer ends the call at once, its error carrying the wait
	// (node.Error.RetryAfter) for the engine. 0 means DefaultMaxWait.
	MaxWait time.Duration
	// Backoff is the wait before retry n (1, 2, …) when the reply names
	// none. Nil: 1 s, 2 s, 4 s … with ±20 % jitter, at most 30 s.
	Backoff func(n int) time.Duration
	// Sleep waits d or until ctx is done. Nil: a timer. Tests put a
	// recorder here instead of waiting.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Do calls call until it succeeds, fails for good, or the retries are
// spent. Errors are classified with Classify; the last one is returned,
// with the number of attempts in its details.
func (p RetryPolicy) Do(ctx context.Context, provider string, call func(ctx context.Context) (*Response, error)) (*Response, error) {
	maxRetries := p.MaxRetries
	switch {
	case maxRetries == 0:
		maxRetries = DefaultMaxRetries
	case maxRetries < 0:
		maxRetries = 0
	}
	maxWait := p.MaxWait
	if maxWait <= 0 {
		maxWait = DefaultMaxWait
	}
	backoff := p.Backoff
	if backoff == nil {
		backoff = DefaultBackoff
	}
	sleep := p.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	for attempt := 1; ; attempt++ {
		resp, err := call(ctx)
		if err == nil {
			return resp, nil
		}
		e := Classify(provider, err)
		if !retryable(e) || attempt > maxRetries || e.RetryAfter > maxWait {
			return nil, withAttempts(e, attempt)
		}
		wait := e.RetryAfter
		if wait <= 0 {
			wait = backoff(attempt)
		}
		if serr := sleep(ctx, wait); serr != nil {
			// The deadline passed while waiting: say so, keeping what
			// the last reply said.
			out := Classify(provider, serr)
			out.Message += " (while waiting to retry after: " + e.Message + ")"
			return nil, withAttempts(out, attempt)
		}
	}
}

func withAttempts(e *node.Error, attempts int) *node.Error {
	if attempts > 1 {
		if e.Details == nil {
			e.Details = map[string]any{}
		}
		e.Details["attempts"] = attempts
	}
	return e
}

// DefaultBackoff waits 1 s before the first retry and doubles each time, at
// most 30 s, with ±20 % jitter: cenkalti/backoff's exponential schedule.
func DefaultBackoff(n int) time.Duration {
	b := backoff.ExponentialBackOff{InitialInterval: time.Second, RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: 30 * time.Second}
	d := b.NextBackOff()
	for i := 1; i < n; i++ {
		d = b.NextBackOff()
	}
	return d
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
