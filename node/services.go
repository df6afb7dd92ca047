package node

import (
	"context"
	"fmt"
	"time"
)

// Services are what a host gives kinds besides their parameters: the run's
// MCP servers, its models, its budget, a way to run child workflows, a
// judge, the HTTP policy. Each is reached through a typed key, a
// *Service[T] declared by the package that defines T (the standard ones
// below; the MCP pool in the mcp client, the models in the AI kinds), so a
// kind gets its service in its own type, checked by the compiler, and a
// service the host did not provide is an error the kind reports, never a
// check it silently skips.
//
// Keys rather than one struct field per service keep this package free of
// the MCP and model types, whose packages depend on it.
//
// Each Provide adds one link to the services it extends, which it leaves
// as they are: a run's dozen services cost a dozen small allocations, not
// a map copied a dozen times, and a lookup walks at most that many links.
type Services struct {
	parent *Services
	key    any // the *Service[T]; nil in an empty Services
	val    any
}

// Service is the typed key of one service.
type Service[T any] struct {
	name string
}

// NewService declares a service. name says what it is in errors: "this
// host does not provide <name>".
func NewService[T any](name string) *Service[T] { return &Service[T]{name: name} }

// Name is the service's name.
func (k *Service[T]) Name() string { return k.name }

// Provide returns services holding s's services and v as k's; s is not
// changed. s may be nil.
func (k *Service[T]) Provide(s *Services, v T) *Services {
	return &Services{parent: s, key: k, val: v}
}

// Lookup returns the service of s, and whether the host provided it.
func (k *Service[T]) Lookup(s *Services) (T, bool) {
	for ; s != nil; s = s.parent {
		if s.key == any(k) { // the latest Provide of k
			v, ok := s.val.(T)
			return v, ok
		}
	}
	var zero T
	return zero, false
}

// Get returns the service a call's host provided, or a permanent error
// that names the service and the node when there is none.
func (k *Service[T]) Get(c *Call) (T, error) {
	v, ok := k.Lookup(c.Services)
	if !ok {
		e := Failf(CategoryInternal, "service_unavailable", "node %s needs %s, which this host does not provide", c.NodeID, k.name)
		e.Permanent = true
		return v, e
	}
	return v, nil
}

// Budget is the run's budget of tokens and cost.
type Budget interface {
	// CheckExtra fails once the run's spending plus tokens and costUSD
	// passes a limit.
	CheckExtra(tokens int, costUSD float64) error
	// CostLimited reports whether the run's cost is limited (its
	// max_cost_usd, or a parent run's): a model without a price cannot be
	// counted against it.
	CostLimited() bool
}

// Children runs child workflows (the subworkflow kind).
type Children interface {
	RunChild(ctx context.Context, path string, inputs map[string]any) (map[string]any, error)
}

// NamedChildren is what a Children service also does for a kind that
// runs several child workflows in one step (an agent's workflow tools).
type NamedChildren interface {
	// InputSchema returns the JSON Schema of the inputs the child workflow
	// at path (relative to the running workflow's file) declares, and the
	// workflow's description; it fails when the file is missing or
	// invalid.
	InputSchema(path string) (schema map[string]any, description string, err error)
	// RunNamedChild runs the child workflow at path as a child run whose
	// id ends with name, which tells it from the step's other child runs:
	// the same name in a resumed step finds the same child run again, so a
	// completed one answers from its record rather than running again.
	RunNamedChild(ctx context.Context, name, path string, inputs map[string]any) (map[string]any, error)
}

// Judge judges a value with a model (a guardrail with judge:). It returns
// whether the value passed, the judge's reasons and the token usage
// directive of the call (with the error too, when the model answered and
// its replies were billed).
type Judge interface {
	JudgeValue(ctx context.Context, model, prompt string, value any) (bool, string, map[string]any, error)
}

// Clock gives each call its clock (Call.Now). A host that records a run's
// interactions provides one, so that the times a kind reads are recorded,
// and given again when the run is replayed; base is the run's clock.
type Clock interface {
	CallClock(c *Call, base func() time.Time) func() time.Time
}

// The standard services.
var (
	ClockService    = NewService[Clock]("the run's clock")
	BudgetService   = NewService[Budget]("the run's budget")
	ChildrenService = NewService[Children]("a way to run child workflows")
	JudgeService    = NewService[Judge]("a judge model")
)

// String lists the services held, for debugging.
func (s *Services) String() string {
	if s == nil {
		return "no services"
	}
	var names []string
	seen := map[any]bool{}
	for ; s != nil; s = s.parent {
		if n, ok := s.key.(interface{ Name() string }); ok && !seen[s.key] {
			seen[s.key] = true
			names = append(names, n.Name())
		}
	}
	return fmt.Sprint(names)
}
