// Package trigger declares the kinds that start a run: manual, webhook,
// schedule and chat. A trigger's output is the payload it fired with.
package trigger

import (
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/schedule"
	"github.com/skeinhq/skein/node"
)

// Kind names.
const (
	Manual   = "trigger.manual"
	Webhook  = "trigger.webhook"
	Schedule = "trigger.schedule"
	Chat     = "trigger.chat"
)

func init() {
	node.MustRegister(node.Spec{
		Kind:            Manual,
		Category:        node.Trigger,
		Role:            node.RoleTrigger,
		StartsByDefault: true,
		Description:     "Starts a run by hand (skein run, the API). Its output is the run's inputs.",
	}, nil)
	node.MustRegister(node.Spec{
		Kind:        Webhook,
		Category:    node.Trigger,
		Role:        node.RoleTrigger,
		Description: "Starts a run when skein serve gets an HTTP request at /hooks/{workflow}/{path}. Its output is the request: body (parsed by its content type: JSON, form or text), headers (lower-case names, without the auth headers), query and method.",
		Params: []node.Param{
			{Name: "path", Type: node.String, NoTemplate: true, Description: "The last part of the hook URL; defaults to the node id."},
			{Name: "method", Type: node.String, Default: "POST", Enum: []string{"GET", "POST", "PUT", "PATCH", "DELETE"}, NoTemplate: true, Description: "The HTTP method the hook accepts."},
			{Name: "auth", Type: node.Map, Description: "How callers prove who they are: {type: hmac, secret: \"{{ secrets.X }}\"} (Standard Webhooks signatures; the secret is whsec_ and base64), {type: bearer, secret: …, header: X-Token} (a shared secret in Authorization: Bearer, or as the value of header), or {type: none}. Without auth every request is refused."},
			{Name: "max_body", Type: node.String, Default: "1MiB", NoTemplate: true, Description: "The largest body accepted (a size such as 64KiB or 4MiB, at most 16MiB); a larger one is answered 413."},
			{Name: "respond", Type: node.String, Default: RespondAccepted, Enum: []string{RespondAccepted, RespondOnFinish}, NoTemplate: true, Description: "accepted: answer 202 with the run id at once; on_finish: answer with the run's outputs when it ends (202 after respond_timeout)."},
			{Name: "respond_timeout", Type: node.Duration, Default: "30s", Description: "How long respond: on_finish waits for the run to end, at most 5m."},
		},
		Outputs: []string{"body", "headers", "query", "method"},
		Check: func(p map[string]any) []node.ParamError {
			_, errs := ParseWebhook("hook", p)
			return errs
		},
	}, nil)
	node.MustRegister(node.Spec{
		Kind:     Schedule,
		Category: node.Trigger,
		Role:     node.RoleTrigger,
		Description: "Starts a run on a cron schedule while skein serve runs. A fixed time of day is read on the wall clock of tz: " +
			"a time the clocks skip fires once when they jump, a time they repeat fires once, the first time; " +
			"an expression with * in its minute or hour field follows the clock, and @every is real time.",
		Params: []node.Param{
			{Name: "cron", Type: node.String, Required: true, NoTemplate: true, Description: "Five-field cron expression (minute hour day month weekday) or @hourly, @daily, @every 5m."},
			{Name: "tz", Type: node.String, NoTemplate: true, Default: "UTC", Description: "IANA time zone the expression is read in."},
			{Name: "missed", Type: node.String, NoTemplate: true, Default: schedule.MissedSkip, Enum: []string{schedule.MissedSkip, schedule.MissedRunOnce},
				Description: "Fire times that passed while no server ran (or found more than a minute late): skip drops them, run_once starts one run for them all."},
			{Name: "overlap", Type: node.String, NoTemplate: true, Default: schedule.OverlapSkip, Enum: []string{schedule.OverlapSkip, schedule.OverlapAllow},
				Description: "A fire while the previous fire's run still runs or waits: skip does not start another, allow does."},
		},
		Outputs: []string{"scheduled_at", "missed"},
		Check: func(p map[string]any) []node.ParamError {
			var errs []node.ParamError
			if c, ok := p["cron"].(string); ok {
				if err := schedule.CheckCron(c); err != nil {
					errs = append(errs, node.ParamError{Param: "cron", Message: "bad cron expression " + quote(c) + ": " + err.Error() + " (write e.g. \"*/5 * * * *\" or @daily)"})
				}
			}
			if tz, ok := p["tz"].(string); ok {
				if _, err := time.LoadLocation(tz); err != nil {
					errs = append(errs, node.ParamError{Param: "tz", Message: "unknown time zone " + quote(tz) + " (write e.g. Europe/Paris or UTC)"})
				}
			}
			return errs
		},
	}, nil)
	node.MustRegister(node.Spec{
		Kind:        Chat,
		Category:    node.Trigger,
		Role:        node.RoleTrigger,
		Description: "Starts a run with a chat message (POST /api/chat/{workflow} of skein serve); the run's output reply is the answer. Its output: message, conversation (the conversation id; session is the same, its older name) and history (the conversation's earlier messages, oldest first: {role: user|assistant, content, execution_id}).",
		Outputs:     []string{"message", "conversation", "session", "history"},
	}, nil)
}

func quote(s string) string { return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\"" }
