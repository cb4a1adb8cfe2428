//go:build !linux

// No parent-death signal outside Linux.

package pdeath

import "os/exec"

// setDeathSignal does nothing: there is no parent-death signal outside
// Linux.
func setDeathSignal(*exec.Cmd) {}
