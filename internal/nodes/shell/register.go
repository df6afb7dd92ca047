package shell

import "github.com/skeinhq/skein/node"

func init() { node.MustRegister(Spec, func() node.Kind { return &Shell{} }) }
