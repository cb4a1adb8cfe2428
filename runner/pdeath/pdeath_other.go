//go:build !linux

// No parent-death signal outside Linux.

package pdeath

import "os/exec"

// setDeathSignal does nothing.
func setDeathSignal(*exec.Cmd) {}
