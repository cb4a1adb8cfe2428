//go:build unix && !linux

// The executable the guard is started from, outside Linux.

package runner

import "os"

// selfExe is the executable the guard is started from.
func selfExe() (string, error) { return os.Executable() }
