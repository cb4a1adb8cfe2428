package lease

// deputy.go: the deputy, a waiting follower that stands by to take over in
// a blink, and its place, the helper lease NAME~deputy (names.go), with its
// record (holder, since) as status and list show it.
//
// Among the followers of a lease that wait (WaitOptions.Deputy; not
// NoWait, not Schedule, one slot), one holds the place: a lease on its own
// blob, taken with an ordinary Acquire Lease and renewed by the keeper
// (keeper.go) as any lease. While it holds it, it reads the lease every
// Deputy (±20 %) instead of every PollInterval: a lease given up is taken
// within a fraction of a second, not within a poll of seconds. The others
// read the lease every PollInterval as before and, at a poll, the place
// too (one read more, never two): at their first poll, at the first after
// a change of term (a handover: the deputy led, its place is free), and
// otherwise every placeRecheck (±20 %); the first to find it free takes
// it. A deputy that stops or turns unready is replaced within about
// placeRecheck, one that dies within its place's lease more. The deputy gives
// its place up (a release) once it has acquired the lease, when its
// Acquire ends otherwise (a stop request, a timeout, a failure), and when
// it is no longer ready (WaitOptions.Ready).
//
// The place grants nothing: acquiring the lease is unchanged, any follower
// that finds it free acquires it as before, and the safety rule never
// looks at the place. Two deputies at once (one frozen past its place's
// lease, one that took the place since) only read more often; none (the
// deputy killed) leaves the handover to the others' polls until the place
// expires and one of them takes it.
//
// What it costs, in requests an hour: the deputy 3600/Deputy reads of the
// lease (14,400 at the default 250 ms) and 720 renewals of its place (a
// 15 s lease); every other waiting follower 3600/PollInterval reads of the
// lease, as before (1,800 at the default 2 s), and 240 of the place, one
// more after each handover. Taking the place is a read, an acquire and a
// metadata write; giving it up, one release.

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// DefaultDeputyPoll is how often the deputy reads the lease by default.
const DefaultDeputyPoll = 250 * time.Millisecond

// placeRecheck is how often a follower without the place reads it when
// the lease's term has not changed: the place's lease duration, the time
// a deputy that died keeps it.
const placeRecheck = MinDuration

// The place's metadata keys: who holds it and since when (service time).
// Written by the deputy right after it took the place, with its lease ID.
const (
	mdDeputyHolder = mdHolder
	mdDeputySince  = "since"
)

// Deputy is a lease's deputy, as its place records it.
type Deputy struct {
	Holder string    // the deputy's identity
	Since  time.Time // when it took the place, by the service's clock; zero if not recorded
}

// DeputyOf reads a deputy from its place's properties (a read or a
// listing of DeputyBlob): nil when the place is not held, so that a
// deputy gone (killed, its place expired) is not shown.
func DeputyOf(p *Properties) *Deputy {
	if p == nil || !p.Exists || !p.State.Held() || p.Holder == "" {
		return nil
	}
	return &Deputy{Holder: p.Holder, Since: parseTime(p.Metadata[mdDeputySince]).UTC()}
}

// ReadDeputy reads the lease's deputy's place (one request): its deputy,
// nil if none. Failures are *StorageError; a done ctx returns ctx.Err().
func (b *Blob) ReadDeputy(ctx context.Context) (*Deputy, error) {
	if b.deputy == nil {
		return nil, configErr("lease name", "this client has no lease, so no deputy")
	}
	p, err := b.deputy.Properties(ctx)
	if err != nil {
		return nil, err
	}
	return DeputyOf(p), nil
}

// placeConfig is the place's lease: the shortest Azure allows, renewed
// every third of it, whatever the lease's own duration, so that a deputy
// killed leaves its place to another within 15 s.
func placeConfig(cfg Config) Config {
	cfg.Duration, cfg.RenewInterval = MinDuration, MinDuration/3
	return cfg
}

// deputyOn reports whether this Acquire stands by as a deputy when it can:
// it waits, for one slot, unscheduled, with a Deputy poll shorter than its
// PollInterval (else the place would change nothing), on a lease blob that
// has a place (NewLeaseBlob).
func (a *attempt) deputyOn() bool {
	w := a.w
	return w.Deputy > 0 && w.Deputy < a.e.cfg.PollInterval && !w.NoWait && w.Schedule == nil &&
		a.e.cfg.Slots == 1 && a.parent == nil && a.b.deputy != nil
}

// standBy comes before each poll's wait: a deputy that is not ready gives
// its place up; one whose keeper lost the place forgets it; a follower
// without the place reads it when due (placeDue: one request) and takes it
// if it is free. Failures are not retried: the next due poll looks again.
func (a *attempt) standBy(ctx context.Context) {
	if !a.deputyOn() {
		return
	}
	if a.place != nil {
		select {
		case <-a.place.Lost():
			// The keeper has stopped: nothing to release that would answer.
			a.e.log.Debug("the deputy's place was lost", "reason", a.place.LostErr().Reason)
			a.place = nil
			a.placeAt = time.Time{} // look again at once
			a.toldDeputy(false)
		default:
			if a.notReady != "" {
				<-a.leavePlace(ctx)
				a.toldDeputy(false)
			}
			return
		}
	}
	if a.notReady != "" || ctx.Err() != nil || !a.placeDue() {
		return
	}
	a.takePlace(ctx)
	a.placeAt, a.placeTerm = time.Now().Add(a.e.dice.jitter(placeRecheck, 0.2)), a.termSeen
}

// placeDue reports whether a follower without the place reads it at this
// poll: the first time, after a change of the lease's term (a handover,
// after which the place is usually free), or placeRecheck after the last.
func (a *attempt) placeDue() bool {
	return a.placeAt.IsZero() || a.termSeen != a.placeTerm || !time.Now().Before(a.placeAt)
}

// takePlace reads the place and, if it is free, acquires it (creating its
// blob if missing), records this follower as its holder and starts its
// keeper. A record that fails gives the place back: a place held under
// another's name would mislead status.
func (a *attempt) takePlace(ctx context.Context) {
	d, cfg := a.b.deputy, placeConfig(a.e.cfg)
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	p, err := d.getProperties(rctx)
	if err != nil || p.State.Held() {
		if err != nil {
			a.e.log.Debug("could not read the deputy's place", "error", err)
		}
		return
	}
	id := uuid.NewString()
	secs := int(cfg.Duration / time.Second)
	sent := time.Now()
	ans, err := d.api.acquireLease(rctx, id, secs)
	if se := asStorageError(err); se != nil && se.kind == kindBlobMissing {
		// The first deputy of the lease makes its place: a zero-length blob,
		// If-None-Match: *, as the lease blob; made by another first is fine.
		_, cerr := d.api.createBlob(rctx)
		if se := asStorageError(cerr); cerr == nil || se != nil && (se.kind == kindExists || se.StatusCode == http.StatusPreconditionFailed) {
			sent = time.Now()
			ans, err = d.api.acquireLease(rctx, id, secs)
		}
	}
	if err != nil {
		a.e.log.Debug("could not take the deputy's place", "error", err)
		return
	}
	l := newLease(d, cfg, a.e.dice, id, sent, ans.Date)
	l.log = placeLog{cfg.Logger.Named("deputy")}
	md := map[string]string{mdDeputyHolder: cfg.Identity}
	if !ans.Date.IsZero() {
		md[mdDeputySince] = formatTime(ans.Date)
	}
	if _, err := d.api.setMetadata(rctx, id, "", md); err != nil {
		a.e.log.Debug("could not record the deputy; giving its place back", "error", err)
		_ = l.Release(ctx)
		return
	}
	l.Keep(context.WithoutCancel(ctx)) // Release stops it
	a.place = l
	a.toldDeputy(true)
}

// leavePlace gives the deputy's place up, if held: the release goes on
// behind it (a fresh context, at most releaseTimeout), and the channel
// closes once it is done.
func (a *attempt) leavePlace(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	l := a.place
	if l == nil {
		close(done)
		return done
	}
	a.place = nil
	go func() {
		defer close(done)
		if err := l.Release(ctx); err != nil {
			a.e.log.Debug("could not release the deputy's place; it expires by itself", "error", err, "within", l.Duration)
		}
	}()
	return done
}

// toldDeputy tells OnDeputy of a change.
func (a *attempt) toldDeputy(standing bool) {
	if a.w.OnDeputy != nil {
		a.w.OnDeputy(standing)
	}
}

// pollEvery is the current poll interval: the deputy's while this follower
// holds the place, else PollInterval.
func (a *attempt) pollEvery() time.Duration {
	if a.place != nil {
		return a.w.Deputy
	}
	return a.e.cfg.PollInterval
}

// placeLog is the place's keeper's log: what the keeper warns of for the
// lease is, for the deputy's place, no more than news (a deputy that
// loses its place polls as the others do, and nothing else changes).
type placeLog struct{ hclog.Logger }

func (p placeLog) Warn(msg string, args ...any) { p.Logger.Debug(msg, args...) }
