// Package pdeath starts a process that dies with the thread that started it:
// on Linux it gets a parent-death signal (SIGKILL), and the goroutine that
// starts it stays locked to its OS thread until the process has been reaped,
// because the signal fires when that thread exits, not the whole program
// (golang/go#27505). Elsewhere there is no such signal and Start is a plain
// start and wait. StartUnreaped tells of the exit before reaping, so that
// the caller can still signal the process's group while its pid is held.
//
// The runner (the guard's command, the health check's shell) and the test
// and benchmark drivers start their processes through it.
package pdeath
