package llm

import (
	"fmt"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/node"
)

// Bounds of the sampling parameters both providers accept.
const (
	minTemperature = 0
	maxTemperature = 2
)

// sampling sets a request's temperature and max_tokens from the node's
// parameters, refusing values no provider accepts (a template may have
// rendered them, so they are checked again here).
func sampling(c *node.Call, req *llm.Request) error {
	if t, ok := c.Number("temperature"); ok {
		if msg := temperatureProblem(t); msg != "" {
			return node.Failf(node.CategoryValidation, "param_value", "node %s: %s", c.NodeID, msg)
		}
		req.Temperature = &t
	}
	if n, ok := c.Int("max_tokens"); ok {
		if msg := maxTokensProblem(n); msg != "" {
			return node.Failf(node.CategoryValidation, "param_value", "node %s: %s", c.NodeID, msg)
		}
		req.MaxTokens = n
	}
	return nil
}

func temperatureProblem(t float64) string {
	if t < minTemperature || t > maxTemperature {
		return fmt.Sprintf("temperature must be between %d and %d, not %g", minTemperature, maxTemperature, t)
	}
	return ""
}

func maxTokensProblem(n int) string {
	if n <= 0 {
		return fmt.Sprintf("max_tokens must be more than 0, not %d", n)
	}
	return ""
}

// checkSampling reports temperature and max_tokens written out of bounds
// (a template is let through: the run checks what it renders).
func checkSampling(p map[string]any) []node.ParamError {
	var errs []node.ParamError
	if v, ok := p["temperature"]; ok {
		if t, err := (node.Param{Type: node.Number}).Coerce(v); err == nil {
			f, isFloat := t.(float64)
			if i, isInt := t.(int); isInt {
				f, isFloat = float64(i), true
			}
			if isFloat {
				if msg := temperatureProblem(f); msg != "" {
					errs = append(errs, node.ParamError{Param: "temperature", Message: msg})
				}
			}
		}
	}
	if v, ok := p["max_tokens"]; ok {
		if n, err := (node.Param{Type: node.Int}).Coerce(v); err == nil {
			if i, ok := n.(int); ok {
				if msg := maxTokensProblem(i); msg != "" {
					errs = append(errs, node.ParamError{Param: "max_tokens", Message: msg})
				}
			}
		}
	}
	return errs
}

// replySchema compiles the node's schema parameter; nil without one.
func replySchema(c *node.Call) (*llm.Schema, error) {
	doc := c.Map("schema")
	if doc == nil {
		return nil, nil
	}
	sch, err := llm.CompileSchema(doc)
	if err != nil {
		e := node.AsError(err)
		e.Message = fmt.Sprintf("node %s: schema: %s", c.NodeID, e.Message)
		return nil, e
	}
	return sch, nil
}
