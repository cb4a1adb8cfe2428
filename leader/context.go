package leader

// context.go: what COMMAND learns of why it runs, beside the lease's
// variables (held.go): the occurrence, the trigger, the attempt, what was
// missed, the last success.

import (
	"strconv"

	"github.com/leaderrun/leaderrun/lease"
)

// runContext is what COMMAND learns of why it runs: LEADERRUN_OCCURRENCE
// (the scheduled occurrence, or a trigger's time), LEADERRUN_TRIGGER
// (schedule, retry, manual) and LEADERRUN_ATTEMPT; with --schedule
// LEADERRUN_PREVIOUS_OCCURRENCE (the schedule's occurrence before it) and,
// but for a manual run, LEADERRUN_MISSED (the occurrences due since the
// previous one started that never started); LEADERRUN_LAST_SUCCESS in any
// mode, when the lease records one. Each is absent when it does not apply.
func runContext(l *lease.Lease, o *Options) []string {
	var env []string
	if !l.Occurrence.IsZero() {
		env = append(env, "LEADERRUN_OCCURRENCE="+rfc3339(l.Occurrence))
	}
	if c := l.Cause; c != nil {
		env = append(env, "LEADERRUN_TRIGGER="+c.Trigger, "LEADERRUN_ATTEMPT="+strconv.Itoa(c.Attempt))
		if o.Schedule != nil && !l.Occurrence.IsZero() {
			if prev := o.Schedule.Previous(l.Occurrence); !prev.IsZero() {
				env = append(env, "LEADERRUN_PREVIOUS_OCCURRENCE="+rfc3339(prev))
			}
		}
		if c.Trigger != lease.TriggerManual && c.Missed >= 0 {
			env = append(env, "LEADERRUN_MISSED="+strconv.Itoa(c.Missed))
		}
	}
	if !l.LastSuccess.IsZero() {
		env = append(env, "LEADERRUN_LAST_SUCCESS="+rfc3339(l.LastSuccess))
	}
	return env
}
