package exit

import (
	"errors"
	"fmt"
	"testing"
)

func TestCode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		code   int
		ok     bool
		reason string
	}{
		{"none", errors.New("plain"), 0, false, "plain"},
		{"with a line", With(Unavailable, errors.New("storage refused")), Unavailable, true, "storage refused"},
		{"wrapped", fmt.Errorf("context: %w", With(Lost, errors.New("lost"))), Lost, true, "context: lost"},
		{"COMMAND's own, no line", With(3, nil), 3, true, "exit status 3"},
		{"usage", Usagef("invalid --slots %d", 0), Usage, true, "invalid --slots 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ok := Code(tc.err)
			if code != tc.code || ok != tc.ok || tc.err.Error() != tc.reason {
				t.Errorf("Code = %d, %v; Error %q; want %d, %v, %q", code, ok, tc.err, tc.code, tc.ok, tc.reason)
			}
		})
	}
}
