// Package delivery sends a message to a URL the way webhooks are sent: an
// HTTP POST of a JSON body signed in the Standard Webhooks scheme
// (webhook-id, webhook-timestamp, webhook-signature), retried with
// exponential backoff a bounded number of times. Each attempt is reported
// to the caller, who records it.
//
// Runs delivers a run that ended to its workflow's delivery: block: it
// renders the URL and secret, posts the run (Body), records each attempt
// as an event of the run, and keeps the store's record of the delivery
// owed up to date, so that a process that dies leaves it for the next.
package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Message is one delivery: its id stays the same across attempts, so a
// receiver can drop a repeat.
type Message struct {
	ID   string
	Body []byte
}

// Policy says how hard to try.
type Policy struct {
	// Retries is how many more attempts follow a failed first one.
	Retries int
	// Backoff is the wait before the first retry, doubled before each
	// next one, with ±20% jitter, at most MaxBackoff.
	Backoff time.Duration
	// Timeout bounds one attempt.
	Timeout time.Duration
	// Made is how many attempts were made before (by a process that
	// died): the attempts go on from Made+1, with the backoff they have
	// reached, after waiting Wait.
	Made int
	Wait time.Duration
	// Once makes one attempt: when another is due, Send returns a
	// *LaterError saying when, instead of waiting (a job queue waits).
	Once bool
}

// LaterError is Send's answer, with Policy.Once, when the attempt failed
// and another is due after Retry.
type LaterError struct{ Attempt Attempt }

func (e *LaterError) Error() string {
	return fmt.Sprintf("delivery attempt %d: %s; again in %s", e.Attempt.N, Describe(e.Attempt), e.Attempt.Retry)
}

// MaxBackoff caps the wait between two attempts.
const MaxBackoff = time.Minute

// Attempt is how one attempt went.
type Attempt struct {
	// N counts the attempts from 1.
	N int
	// Status is the receiver's HTTP status; 0 when no answer came.
	Status   int
	Err      error
	Duration time.Duration
	// Retry is the wait before the next attempt; 0 when there is none.
	Retry time.Duration
}

// OK reports whether the receiver took the message (a 2xx answer).
func (a Attempt) OK() bool { return a.Err == nil && a.Status >= 200 && a.Status < 300 }

// Sender posts messages. The zero value uses http.DefaultClient.
type Sender struct {
	Client *http.Client
	// Now is the clock the signatures' timestamps are read from; default
	// time.Now.
	Now func() time.Time
	// After waits between attempts; default time.After (tests pass one
	// that does not wait).
	After func(time.Duration) <-chan time.Time
}

// ErrGaveUp is returned when no attempt succeeded.
var ErrGaveUp = errors.New("the delivery failed")

// Send posts m to url, signed with secret (whsec_ and base64), until the
// receiver answers 2xx, it refuses the message (a 4xx other than 408 and
// 429: trying again would not help), or p.Retries more attempts failed.
// report sees every attempt. It stops early, with ctx's error, when ctx
// ends.
func (s *Sender) Send(ctx context.Context, url, secret string, m Message, p Policy, report func(Attempt)) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return fmt.Errorf("the delivery secret is not a Standard Webhooks secret (whsec_ and base64): %w", err)
	}
	client, now, after := s.Client, s.Now, s.After
	if client == nil {
		client = http.DefaultClient
	}
	if now == nil {
		now = time.Now
	}
	if after == nil {
		after = time.After
	}
	wait := schedule(p.Backoff)
	for i := 0; i < p.Made; i++ {
		wait.NextBackOff()
	}
	if p.Wait > 0 && !p.Once {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-after(p.Wait):
		}
	}
	for n := p.Made + 1; ; n++ {
		a := s.attempt(ctx, client, wh, now(), url, m, p.Timeout)
		a.N = n
		done := a.OK() || n > p.Retries || !retriable(a) || ctx.Err() != nil
		if !done {
			a.Retry = wait.NextBackOff()
		}
		if report != nil {
			report(a)
		}
		if a.OK() {
			return nil
		}
		if done {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w after %d attempt(s): %s", ErrGaveUp, n, Describe(a))
		}
		if p.Once {
			return &LaterError{Attempt: a}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-after(a.Retry):
		}
	}
}

func (s *Sender) attempt(ctx context.Context, client *http.Client, wh *standardwebhooks.Webhook, at time.Time, url string, m Message, timeout time.Duration) Attempt {
	start := time.Now()
	a := Attempt{}
	sig, err := wh.Sign(m.ID, at, m.Body)
	if err != nil {
		a.Err = err
		return a
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(m.Body))
	if err != nil {
		a.Err = err
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "skein")
	req.Header.Set(standardwebhooks.HeaderWebhookID, m.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := client.Do(req)
	a.Duration = time.Since(start)
	if err != nil {
		a.Err = err
		return a
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	a.Status = resp.StatusCode
	return a
}

// retriable reports whether a failed attempt may succeed later: no
// answer, a timeout or rate limit, or a server error.
func retriable(a Attempt) bool {
	return a.Status == 0 || a.Status == http.StatusRequestTimeout || a.Status == http.StatusTooManyRequests || a.Status >= 500
}

// schedule is the delivery's backoff: first the policy's Backoff, doubled
// before each next attempt up to MaxBackoff, each wait with ±20% jitter.
func schedule(first time.Duration) *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: min(first, MaxBackoff), RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: MaxBackoff}
}

// Describe says how an attempt went, for people: "HTTP 200", or the error.
func Describe(a Attempt) string {
	if a.Err != nil {
		return a.Err.Error()
	}
	return fmt.Sprintf("HTTP %d", a.Status)
}
