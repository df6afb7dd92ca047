// Package standard registers every built-in node kind. Import it for its
// side effect:
//
//	import _ "github.com/skeinhq/skein/node/standard"
package standard

import (
	"github.com/skeinhq/skein/node"

	_ "github.com/skeinhq/skein/internal/nodes/control"
	_ "github.com/skeinhq/skein/internal/nodes/data"
	_ "github.com/skeinhq/skein/internal/nodes/http"
	_ "github.com/skeinhq/skein/internal/nodes/llm"
	_ "github.com/skeinhq/skein/internal/nodes/mcp"
	_ "github.com/skeinhq/skein/internal/nodes/shell"
	_ "github.com/skeinhq/skein/internal/nodes/trigger"
)

// Specs returns the specs of every standard kind (and of any other kind
// registered in node.Default), sorted by kind: what a program embedding
// Skein needs to know about them without importing internal packages.
func Specs() []*node.Spec { return node.Default.Specs() }
