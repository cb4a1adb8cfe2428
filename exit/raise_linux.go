package exit

// Ending by a signal on Linux: the kernel's default action, not Go's.

import (
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelSigsetSize is the size of the kernel's sigset_t (64 signals) that
// rt_sigaction checks, on amd64 and arm64 alike; unix.Sigset_t is libc's,
// larger.
const kernelSigsetSize = 8

// Raise ends the process by sig with the kernel's default action, as
// timeout(1) passes on the signal its command died of: core dumps off, the
// disposition back to SIG_DFL, sig unblocked and sent to this very thread.
// The kernel then ends the process before the call returns, and a parent
// sees "killed by sig" (a shell 128+sig; systemd a clean stop for SIGTERM,
// SIGINT, SIGHUP and SIGPIPE).
//
// Go's signal.Reset would not do: it gives back Go's own handling, which
// for SIGQUIT and SIGABRT prints every goroutine's stack and exits 2. So
// the disposition is set with the raw rt_sigaction call, under the Go
// runtime. Nothing else may run after it: call it last, on the way out.
//
// Raise returns, and the caller exits 128+sig, where the signal does not
// end the process: PID 1 of a PID namespace (a container's init ignores
// the default action of the signals it sends itself), a signal whose
// default is to be ignored, SIGKILL and SIGSTOP (never raised: a COMMAND
// SIGKILLed exits 137, which systemd counts as a failure either way).
func Raise(sig syscall.Signal) {
	if sig <= 0 || sig >= 65 || sig == syscall.SIGKILL || sig == syscall.SIGSTOP {
		return
	}
	runtime.LockOSThread() // the mask and the tgkill below are this thread's
	defer runtime.UnlockOSThread()
	// No core: not dumpable (a core_pattern pipe such as systemd-coredump
	// is not run either), and RLIMIT_CORE 0 for good measure.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	// struct sigaction all zero: SIG_DFL, no flags, an empty mask, whatever
	// the architecture's layout of the other fields.
	var dfl [4]uint64
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0,
		kernelSigsetSize, 0, 0); errno != 0 {
		return
	}
	var set unix.Sigset_t
	set.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	_ = unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
}
