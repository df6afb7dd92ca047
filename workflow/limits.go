package workflow

// Limits on what a workflow file may be, so that a hostile or broken file
// costs an error message and nothing more.
const (
	// MaxFileSize is the largest workflow file accepted.
	MaxFileSize = 8 << 20
	// MaxDepth is the deepest nesting of maps and lists.
	MaxDepth = 64
	// MaxValues caps the values a file may expand to, aliases included.
	MaxValues = 2_000_000
	// MaxNodes caps the nodes of one workflow.
	MaxNodes = 50_000
	// MaxVisitLimit is the largest max_visits, on a node or in defaults;
	// the smallest is 1: every node has a visit limit.
	MaxVisitLimit = 1_000_000
	// MaxChildDepth is how deep subworkflows may nest below the workflow
	// a run starts with.
	MaxChildDepth = 10
)
