// Package leader is the flow of one run: wait for the lease (or skip),
// claim it, start COMMAND, keep the lease while COMMAND runs, stop COMMAND
// before the lease could pass to anyone else, record the run's end, and
// release. The command line (cmd) checks the flags into Options and calls
// Run once; the lease package holds the lease and enforces the safety rule's
// deadlines, the runner package owns COMMAND's processes. The order of the
// steps is the promise: COMMAND is stopped first, and the lease released
// after it has exited (held.go); what ended a run decides the exit status
// in one pure function (outcome.go).
package leader
