package runner

// Finding the command, also on its own, so that a caller can refuse a
// command that cannot be run before it does anything else.

import (
	"errors"
	"io/fs"
	"os/exec"
)

// Lookup resolves argv0 as Start and Prepare do (exec.LookPath: on PATH
// unless it contains a '/'; the executable bit is checked) and starts
// nothing. A command that cannot be run is an *ExecError (Code 127: not
// found, 126: cannot be executed); nil means it could be started now.
//
// Limit: the file may change between Lookup and Start (removed, its mode
// changed): Start looks it up again and reports that the same way.
func Lookup(argv0 string) error {
	_, err := lookup(argv0)
	return err
}

// lookup returns the path argv0 resolves to, or an *ExecError.
func lookup(argv0 string) (string, error) {
	path, err := exec.LookPath(argv0)
	if err != nil {
		var lpErr *exec.Error
		if errors.As(err, &lpErr) {
			err = lpErr.Err
		}
		return "", &ExecError{Path: argv0, Code: execCode(err), Err: err}
	}
	return path, nil
}

// execCode maps a LookPath error to the status a shell would report.
func execCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return 127
	}
	return 126
}
