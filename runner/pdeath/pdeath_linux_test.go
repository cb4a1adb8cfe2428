package pdeath

import (
	"syscall"
	"testing"
)

func checkDeathSignal(t *testing.T, attr *syscall.SysProcAttr) {
	t.Helper()
	if attr.Pdeathsig != syscall.SIGKILL {
		t.Errorf("Pdeathsig %v, want SIGKILL", attr.Pdeathsig)
	}
}
