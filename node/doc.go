// Package node is the contract between Skein and the kinds of node a workflow
// can use.
//
// A kind declares itself once, as a Spec: its parameters (name, type,
// whether required, default, description), the output ports it promises and
// the handles its out-edges may carry. Validation, `skein validate`, the JSON
// Schema of the workflow file and the reference docs are all derived from
// the Spec, so a kind cannot drift from its documentation.
//
// Kinds register from init, the way database/sql drivers do:
//
//	func init() {
//		node.MustRegister(node.Spec{Kind: "shell", ...}, func() node.Kind { return &Shell{} })
//	}
//
// Tests that need a private set of kinds build their own Registry.
package node
