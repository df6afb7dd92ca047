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
//
// A kind shows that it keeps this contract by passing the conformance
// suite of package node/nodetest: its outputs conform to its Spec, a
// cancelled context ends its call with an error of category cancelled,
// every parameter value validation accepts is accepted at run time, and
// every error it returns is an *Error with a category. Every standard kind
// passes it (node/standard's tests).
//
// A kind that starts processes leaves none behind: it starts each in a
// process group of its own that dies with Skein (internal/proc does this
// for the built-in kinds), stops the group when its context ends, and
// reports the group through Call.ProcessStarted when that is set, so a
// resume after a crash can kill what the group left running before the node
// runs again.
package node
