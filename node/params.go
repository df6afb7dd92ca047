package node

import "time"

// Typed reads of a call's parameters. The engine has already coerced every
// declared parameter to its type (Param.Coerce), so these only pick the
// value: a parameter that has no value and no default reads as the zero
// value (Has tells the two apart).

// Has reports whether the parameter has a value.
func (c *Call) Has(name string) bool {
	v, ok := c.Params[name]
	return ok && v != nil
}

// String returns a string parameter, "" when it has no value.
func (c *Call) String(name string) string {
	s, _ := c.Params[name].(string)
	return s
}

// Int returns an integer parameter and whether it has a value.
func (c *Call) Int(name string) (int, bool) {
	n, ok := c.Params[name].(int)
	return n, ok
}

// Number returns a number parameter and whether it has a value.
func (c *Call) Number(name string) (float64, bool) {
	switch x := c.Params[name].(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Bool returns a boolean parameter, false when it has no value.
func (c *Call) Bool(name string) bool {
	b, _ := c.Params[name].(bool)
	return b
}

// Duration returns a duration parameter, 0 when it has no value.
func (c *Call) Duration(name string) time.Duration {
	d, _ := DurationOf(c.Params[name])
	return d
}

// Strings returns a strings parameter, nil when it has no value.
func (c *Call) Strings(name string) []string {
	list, _ := c.Params[name].([]any)
	if list == nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// List returns a list parameter, nil when it has no value.
func (c *Call) List(name string) []any {
	l, _ := c.Params[name].([]any)
	return l
}

// Map returns a map parameter, nil when it has no value.
func (c *Call) Map(name string) map[string]any {
	m, _ := c.Params[name].(map[string]any)
	return m
}
