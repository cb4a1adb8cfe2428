// Package chaos puts leaderrun's safety rule — the child never outlives the
// lease, two children never run at once — to trials under faults, and
// measures what happens.
//
// A trial (Run) starts two real leaderrun processes on one lease of the
// Azurite emulator: the holder, whose storage requests pass through its own
// fault proxy (internal/faultproxy), and a follower that talks to the
// emulator directly and polls every 200 ms. Both run the chaos child
// (ChildPackage), which appends begin, heartbeat and end records to a file
// that the trial shares between them. The trial injects one fault (a Kind),
// waits for the outcome, stops everything it started and reads the records:
// the overlap between any process of one holder and any process of the
// other, how long the holder's group ran after the fault began, the
// failover time, and the scenario's own expectations (exit 76, survival).
//
// # What the measures are worth
//
// Times are CLOCK_REALTIME readings taken by processes on one machine, so
// they compare directly (a wall-clock step during a trial would distort
// them). A process that ends by itself writes an end record; one killed by
// SIGKILL writes none, and its end is its last heartbeat: it died within
// one heartbeat period (20 ms) plus scheduling delay after that, and each
// Result reports the largest heartbeat gap seen. The safety margins checked
// are a second wide, fifty times the heartbeat period.
//
// The promise under test is bounded by leaderrun's own: a deleted lease blob
// (StorageLoss) lets a follower in before the holder's next renewal, so that
// scenario reports its overlap instead of failing on it. A frozen leaderrun
// (Freeze) is held to no overlap: the guard process kills the group at the
// kill deadline by itself.
package chaos
