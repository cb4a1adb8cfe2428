// Package imds reads Azure's Scheduled Events from the Instance Metadata
// Service (IMDS), so that a leader can step down before the platform takes
// its VM (a Spot eviction, a scale-in, a reboot, a redeploy, a freeze).
//
// A [Client] makes the two requests leaderrun needs: this VM's name, once
// ([Client.VMName]), and the scheduled-events document ([Client.Events]).
// The event model ([Event.Concerns], [Document.Earliest]) is pure. A
// [Watcher] polls the events and tells whether one concerns this VM
// ([Watcher.Pending], [Watcher.Appeared]).
//
// # Promises
//
//   - Every request is a GET with the header "Metadata: true", made directly
//     (never through an HTTP proxy from the environment), with its own
//     timeout, and without any credential. A redirect is not followed.
//   - The package never approves an event: it never POSTs, so it never
//     hurries the platform for the other workloads on the VM.
//   - An unreachable or failing service is never an event. A failed poll
//     tells nothing new: before the first answer no event is known; after
//     it, the last answer stands until the next one. The caller goes on as
//     it would without Scheduled Events; it never treats a failure as having
//     lost the lease.
//
// # Limits
//
//   - The service allows about 5 requests per second per VM; a Watcher polls
//     at most every 200 ms (once a second by default) and at least every 2 s.
//   - The first request after the VM boots enables the service and may take
//     about two minutes to answer. Requests time out after a few seconds
//     (2 s by default) and are retried on the next poll, so nothing waits for
//     that first answer for longer than one request's timeout.
//   - NotBefore is the platform's wall-clock time, read against this host's
//     wall clock; a host clock that is off by N seconds moves the deadline by
//     N seconds. A caller that turns it into a deadline should do so once
//     ([Event.StartsBy]) and then count on the monotonic clock.
//   - The Azure documentation gives the minimum notice: Freeze and Reboot
//     15 min, Redeploy 10 min, Terminate 5–15 min (only when the scale set's
//     terminate notification is on), Preempt (Spot eviction) 30 s. A Freeze
//     that pauses the VM before the event is seen cannot be acted on.
package imds
