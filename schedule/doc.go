// Package schedule decides which occurrence of a cron schedule is due, for
// leaderrun --schedule. The schedule is parsed by robfig/cron (the parser
// Kubernetes CronJob uses): five fields or a descriptor (@hourly, @daily,
// @weekly, @monthly, @yearly), with an optional CRON_TZ=Zone prefix; the
// default zone is UTC, not the host's, so that every VM of a fleet reads a
// schedule alike. The decision takes plain time values (the service's clock,
// the blob's creation, the occurrence last started) and does no I/O.
//
// # Occurrences across a change of the zone's offset (DST)
//
// The rule is Vixie cron's, the cron of Debian and Red Hat:
//
//   - A fixed-time schedule (its minute and hour fields both name values:
//     "30 1 * * *", "0 0,12 * * *", "15 3 1 * *", @daily, @weekly,
//     @monthly, @yearly) occurs at wall times in its zone. A wall time the
//     zone repeats (fall back) is one occurrence, at its first instant; a
//     wall time the zone skips (spring forward) is one occurrence, at the
//     first instant after the gap. "CRON_TZ=America/New_York 30 1 * * *"
//     runs once on 2026-11-01 (05:30Z); "30 2 * * *" runs on 2026-03-08 at
//     03:00 EDT (07:00Z).
//   - A wildcard schedule (its minute or hour field begins with * or ?:
//     "*/30 * * * *", "0 * * * *", "5 */2 * * *", @hourly) follows the
//     clock as it reads at each instant: through a repeated hour it runs
//     again (an hourly job still runs every hour), and wall times the zone
//     skips do not occur.
//
// An occurrence is recorded and compared as an instant (RFC 3339, UTC, to
// the second). Under the rule each wall time of a fixed-time schedule has
// exactly one instant, so "the same wall time" and "the same instant" are
// one test: the second 01:30 of a fall-back night is not an occurrence at
// all, and an occurrence last started at the first 01:30 makes that night's
// 01:30 started. The stored format did not change with the rule: a record
// written before it (the second 01:30, say) still compares correctly, as it
// is later than the occurrence that now stands for that wall time.
//
// Searches are bounded: no occurrence further than five years from a
// given instant is found (29 February, every fourth year, is), and a
// schedule with none within five years is refused by Parse.
package schedule
