package workflow

import (
	"net/url"
	"strings"
	"time"

	"github.com/skeinhq/skein/expr"
)

// Delivery is where a run's result goes when the run ends (`delivery:`):
// an HTTP POST of the run's summary and outputs to URL, signed with Secret
// in the Standard Webhooks scheme, retried with exponential backoff.
type Delivery struct {
	// URL is a template that may read inputs, secrets, execution and
	// trigger; it must render an http or https URL.
	URL string
	// Secret signs the deliveries: a Standard Webhooks secret (whsec_ and
	// base64), usually "{{ secrets.NAME }}".
	Secret string
	// Events are the final run statuses that are delivered (completed,
	// failed, cancelled); all of them by default.
	Events []string
	// Retries is how many more attempts follow a failed first one.
	Retries int
	// RetryBackoff is the wait before the first retry, doubled before each
	// next one (with jitter, at most a minute).
	RetryBackoff time.Duration
	// Timeout bounds one attempt.
	Timeout time.Duration
	Pos     Pos

	urlRaw, secretRaw *value // for positions inside the templates
}

// DeliveryEvents are the run statuses a delivery may be made for.
var DeliveryEvents = []string{"completed", "failed", "cancelled"}

// Defaults and bounds of a delivery.
const (
	DefaultDeliveryRetries = 4
	MaxDeliveryRetries     = 10
	DefaultDeliveryBackoff = time.Second
	DefaultDeliveryTimeout = 10 * time.Second
)

// Delivers reports whether a run that ended with status is delivered.
func (d *Delivery) Delivers(status string) bool {
	return d != nil && contains(d.Events, status)
}

func (dec *decoder) delivery(w *Workflow, v *value) {
	if v.kind != vMap {
		dec.typeErr(v, "delivery", "", "a map {url, secret, events}")
		return
	}
	d := &Delivery{Events: append([]string(nil), DeliveryEvents...), Retries: DefaultDeliveryRetries,
		RetryBackoff: DefaultDeliveryBackoff, Timeout: DefaultDeliveryTimeout, Pos: v.pos}
	var urlVal, secretVal *value
	dec.fields(v, "delivery", "", "delivery", []string{"url", "secret", "events", "retries", "retry_backoff", "timeout"}, func(k string, fv *value, _ Pos) {
		p := "delivery." + k
		switch k {
		case "url":
			d.URL, _ = dec.str(fv, p, "")
			urlVal = fv
		case "secret":
			d.Secret, _ = dec.str(fv, p, "")
			secretVal = fv
		case "events":
			evs, ok := dec.strings(fv, p, "")
			if !ok {
				return
			}
			d.Events = nil
			for i, e := range evs {
				if !contains(DeliveryEvents, e) {
					pos := fv.pos
					if fv.kind == vList && i < len(fv.list) {
						pos = fv.list[i].pos
					}
					dec.d.errorf(pos, p, "", "delivery event %q is not a final run status%s (events: %s)", e, didYouMean(e, DeliveryEvents), strings.Join(DeliveryEvents, ", "))
					continue
				}
				d.Events = append(d.Events, e)
			}
		case "retries":
			if n, ok := dec.integer(fv, p, "", 0, MaxDeliveryRetries); ok {
				d.Retries = n
			}
		case "retry_backoff":
			if dur, ok := dec.duration(fv, p, ""); ok {
				d.RetryBackoff = dur
			}
		case "timeout":
			if dur, ok := dec.duration(fv, p, ""); ok {
				if dur <= 0 {
					dec.d.errorf(fv.pos, p, "", "delivery timeout must be more than 0")
				} else {
					d.Timeout = dur
				}
			}
		}
	})
	switch {
	case urlVal == nil:
		dec.d.errorf(v.pos, "delivery.url", "", "delivery needs a url to POST the run's result to")
	case d.URL != "" && !expr.HasTemplate(d.URL):
		if u, err := url.Parse(d.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			dec.d.errorf(urlVal.pos, "delivery.url", "", "delivery url %q is not an http or https URL", d.URL)
		}
	}
	switch {
	case secretVal == nil:
		dec.d.errorf(v.pos, "delivery.secret", "", `delivery needs a secret to sign with, such as secret: "{{ secrets.DELIVERY_SECRET }}" (a Standard Webhooks secret: whsec_ and base64)`)
	case d.Secret != "" && !expr.HasTemplate(d.Secret) && !strings.HasPrefix(d.Secret, "whsec_"):
		dec.d.errorf(secretVal.pos, "delivery.secret", "", "delivery secret must be a Standard Webhooks secret (whsec_ and base64), best read from secrets: \"{{ secrets.NAME }}\"")
	}
	d.urlRaw, d.secretRaw = urlVal, secretVal
	w.Delivery = d
}

// deliveryRefs checks what the delivery's templates read.
func (v *validator) deliveryRefs() {
	d := v.w.Delivery
	if d == nil {
		return
	}
	for _, f := range []struct {
		key string
		raw *value
	}{{"url", d.urlRaw}, {"secret", d.secretRaw}} {
		if f.raw != nil {
			v.templates(f.raw, refSite{user: -1, pos: f.raw.pos, path: "delivery." + f.key, roots: deliveryRoots})
		}
	}
}
