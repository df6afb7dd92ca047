// Package standard registers every built-in node kind. Import it for its
// side effect:
//
//	import _ "github.com/skeinhq/skein/internal/nodes/standard"
package standard

import (
	_ "github.com/skeinhq/skein/internal/nodes/control"
	_ "github.com/skeinhq/skein/internal/nodes/data"
	_ "github.com/skeinhq/skein/internal/nodes/http"
	_ "github.com/skeinhq/skein/internal/nodes/llm"
	_ "github.com/skeinhq/skein/internal/nodes/mcp"
	_ "github.com/skeinhq/skein/internal/nodes/shell"
	_ "github.com/skeinhq/skein/internal/nodes/trigger"
)
