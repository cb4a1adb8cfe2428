// doctor_checks.go: doctor's first checks (run in order by doctor.go): the
// account, the container, the scratch blob's create, reads and round trip.

package lease

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// account reads Get Account Information: kind, SKU, hierarchical namespace.
func (d *doctor) account(ctx context.Context) {
	ai, r := send(ctx, d, "get account information", d.c.api.accountInfo)
	if r.err != nil {
		d.set(CheckAccount, CheckWarning, "not known: Get Account Information answered %s (runs do not need it)", answerText(r.err))
		return
	}
	desc := cmp.Or(strings.Join(nonEmpty(ai.Kind, ai.SKU), ", "), "kind not said")
	if !ai.HNS {
		d.set(CheckAccount, CheckOK, "%s, hierarchical namespace off", desc)
		return
	}
	detail := desc + ", hierarchical namespace on: directories show in listings (leaderrun ignores them), " +
		"and a lease named like a directory (cron beside cron/report) is refused"
	if i := strings.Index(d.name, "/"); i > 0 {
		detail += fmt.Sprintf("; this lease makes %q a directory, so no lease may be named %q", d.name[:i], d.name[:i])
	}
	d.set(CheckAccount, CheckWarning, "%s", detail)
}

func nonEmpty(ss ...string) []string {
	return slices.DeleteFunc(ss, func(s string) bool { return s == "" })
}

// container reads Get Container Properties (an immutability policy or a
// legal hold refuses every write after the first), creating a missing
// container as a run would. It reports whether to go on, and whether a
// scratch blob could be deleted again (writable).
func (d *doctor) container(ctx context.Context) (usable, writable bool) {
	ci, r := send(ctx, d, "get container properties", d.c.api.containerInfo)
	switch {
	case r.err != nil && r.err.kind == kindContainerMissing:
		_, c := send(ctx, d, "create container", d.s.api.createContainer)
		if c.err != nil && c.err.kind != kindExists {
			d.set(CheckContainer, CheckFailed, "%s does not exist, and creating it was refused: %s",
				d.c.name, d.refusal(c.err, "create (c) on containers, in an account SAS (srt=c)"))
			return false, false
		}
		d.set(CheckContainer, CheckOK, "%s did not exist: created, as the first run would have", d.c.name)
	case r.err != nil:
		d.set(CheckContainer, CheckWarning, "cannot tell whether %s has an immutability policy or a legal hold: %s",
			d.c.name, answerText(r.err))
		d.containerUnread = r.err
	case ci.LegalHold || ci.ImmutabilityPolicy:
		var what []string
		if ci.ImmutabilityPolicy {
			what = append(what, "an immutability policy")
		}
		if ci.LegalHold {
			what = append(what, "a legal hold")
		}
		d.set(CheckContainer, CheckFailed, "%s has %s: %s; %s", d.c.name, strings.Join(what, " and "), immutableCause, immutableFix)
		return true, false
	default:
		d.set(CheckContainer, CheckOK, "%s: no immutability policy, no legal hold", d.c.name)
	}
	return true, true
}

// containerWritten settles a container whose properties could not be read
// (a service SAS may not read them): if the scratch blob's metadata was
// written and the blob deleted, nothing stops a run's writes.
func (d *doctor) containerWritten() {
	if d.containerUnread == nil || d.results[CheckMetadata].Status != CheckOK || d.results[CheckDelete].Status != CheckOK {
		return
	}
	d.set(CheckContainer, CheckOK, "%s: no immutability policy or legal hold stops a write (the scratch blob's metadata and delete went through; "+
		"its properties were not readable: %s)", d.c.name, answerText(d.containerUnread))
}

// create creates the scratch blob as a run creates a lease blob.
func (d *doctor) create(ctx context.Context) bool {
	_, r := send(ctx, d, "create blob", d.s.api.createBlob)
	if r.err != nil {
		d.set(CheckCreate, CheckFailed, "refused: %s", d.refusal(r.err, "create (c) or write (w)"))
		return false
	}
	d.set(CheckCreate, CheckOK, "allowed: created %s", d.s.name)
	return true
}

// reads reads the scratch blob doctorReads times (read, round trip).
func (d *doctor) reads(ctx context.Context) {
	var (
		rtts    []time.Duration
		refused *StorageError
	)
	for range doctorReads {
		_, r := send(ctx, d, "get properties", d.s.api.getProperties)
		switch {
		case r.err == nil || r.err.kind == kindBlobMissing:
			rtts = append(rtts, r.rtt)
		case refused == nil:
			refused = r.err
		}
	}
	if _, done := d.results[CheckRead]; !done {
		if refused != nil {
			d.set(CheckRead, CheckFailed, "refused: %s", d.refusal(refused, "read (r)"))
		} else {
			d.set(CheckRead, CheckOK, "allowed")
		}
	}
	d.roundTrip(rtts)
}

// roundTrip reports the reads' p50 and p95 against a renewal's try and
// window before the stop signal, at the run's lease duration.
func (d *doctor) roundTrip(rtts []time.Duration) {
	if len(rtts) == 0 {
		d.set(CheckRoundTrip, CheckWarning, "not measured: no read was answered")
		return
	}
	p50, p95 := percentile(rtts, 50), percentile(rtts, 95)
	window, try := renewTiming(d.cfg.Duration, d.cfg.StopBudget(), d.cfg.RenewInterval)
	detail := fmt.Sprintf("p50 %s, p95 %s of %d reads; at --lease-duration %s a renewal is sent every %s, each try cut at %s, "+
		"with %s for retries before the stop signal and a %s stop budget: p95 is %.1f%% of a try",
		roundDur(p50), roundDur(p95), len(rtts), d.cfg.Duration, d.cfg.RenewInterval, roundDur(try), roundDur(window),
		d.cfg.StopBudget(), 100*float64(p95)/float64(try))
	switch {
	case p95 >= try:
		d.set(CheckRoundTrip, CheckFailed, "%s: renewals would be cut before they are answered", detail)
	case p95 >= try/4:
		d.set(CheckRoundTrip, CheckWarning, "%s: a slow try leaves little room for retries (a longer --lease-duration gives more)", detail)
	default:
		d.set(CheckRoundTrip, CheckOK, "%s", detail)
	}
}

// percentile is the nearest-rank p-th percentile of ds (not empty).
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[min(max(i, 0), len(s)-1)]
}

// roundDur keeps three significant digits or so.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
