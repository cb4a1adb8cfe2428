// Package sim is a deterministic simulation of leaderrun's whole run flow:
// several hosts, each running the real leader flow with the real lease
// package and the Azure SDK, against an in-memory model of the Blob service
// (blobsim) with Azure's rules, on the virtual time of testing/synctest.
// COMMAND is a fake process behind leader's Launcher seam; its guard keeps
// the kill deadline and the lifeline as the real one does.
//
// One seed draws everything: the mode (a service that waits, cron lines
// with --once-per or --schedule, with --retries on some and --max-runtime
// on some, a deploy step with --once, a rolling patch with --slots and
// --once-per-host), the hosts and their flags (the deputy on three seeds
// in four; on some hosts a --ready-cmd that fails in spans), what each
// COMMAND does (how long it runs, how it exits, whether it ignores SIGTERM),
// and the faults of the first phase: answers lost after the write was
// applied, delays up to the lease duration, 503 bursts, resets, a host cut
// off, SIGTERM/SIGINT at any point, a leaderrun killed (kill -9) or frozen
// (SIGSTOP), an operator's break, pause, drain, resume and (cron modes)
// trigger. A quiet phase follows, with no fault, in which nothing may be
// lost.
//
// The invariants are checked at every step (every request the service
// applies, every launch and death of a COMMAND):
//
//   - at most N COMMANDs run per lease at any instant (N = --slots), a
//     COMMAND running from its launch to its confirmed death;
//   - every running COMMAND's lease is held at the service, by its lease ID,
//     from its launch to its death: no COMMAND outlives its lease;
//   - COMMAND starts with its kill deadline in force, before the stop
//     deadline of its lease;
//   - with --max-runtime (drawn for some cron seeds), no COMMAND runs past
//     it, the grace and SIGKILL's latency, its leaderrun frozen or not;
//   - terms only go up, by at least one at every claim, and no two COMMANDs
//     run under the same term of a blob;
//   - no phantom run: a run the blob records was launched, unless its host
//     was killed, or said, naming the term, that it could not take the
//     claim back (a slot's lease "broken or taken" is checked against the
//     service: a warning that lies is a violation);
//   - no COMMAND is launched while its host's --ready-cmd fails;
//   - a failed attempt is retried at most --retries times, never after a
//     recorded success nor before --retry-delay, its attempt going up;
//   - a trigger runs exactly once: a manual run is the run of a trigger its
//     claim consumed, and no trigger runs twice;
//   - nothing lost: once the faults have stopped, every --once-per window,
//     every --schedule occurrence and every retry due, every --once and
//     --once-per-host round and every service's turn is still run, and
//     every trigger written has run (unless the claim that consumed it
//     belongs to a leaderrun that died, froze or said it could not take it
//     back).
//
// A failure prints its seed and the event trace; the same seed replays the
// same run (TestSimulate's -seed flag), because every draw comes from the
// seed: the lease package's through lease.Config.Rand, the service's faults
// from a hash of the request (which host, which operation, which blob, the
// how-manyth), the events at fixed virtual times.
package sim
