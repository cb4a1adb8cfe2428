// once.go: a contender's checks besides the once-per window: --once
// (someone succeeded), --once-per-host (the done marker NAME~done/HOST,
// names.go), the slot count recorded; and MarkDone. --once with several
// slots is refused: it promises one successful run for the fleet, and with
// N slots up to N contenders would start at once, none seeing the others'
// success until it has ended.

package lease

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// SlotsError: the lease records another slot count than this contender's,
// wrapped in a *ConfigError (a usage error: exit 64).
type SlotsError struct {
	Lease    string // the lease name
	Want     int    // this contender's --slots
	Recorded int    // the count the lease's blobs record
}

func (e *SlotsError) Error() string {
	return fmt.Sprintf("lease %q is used with --slots %d, this contender has --slots %d: use the same count on every host, or another lease name",
		e.Lease, e.Recorded, e.Want)
}

func slotsErr(lease string, want, recorded int) *ConfigError {
	return &ConfigError{Field: "slots", Err: &SlotsError{Lease: lease, Want: want, Recorded: recorded}}
}

// leaseName is the name of the lease a blob belongs to.
func leaseName(blob string) string { return ParseBlobName(blob).Lease }

// pollCheck ends the wait, on any read, before any write: another slot count
// recorded, --once with a success recorded, a directory (isDirectory, blob.go).
func (a *attempt) pollCheck(p *Properties) error {
	if p.Directory {
		return directoryError(a.b.name)
	}
	if r := slotsMismatch(p.Metadata, a.e.cfg.Slots); r != 0 {
		return slotsErr(leaseName(a.b.name), a.e.cfg.Slots, r)
	}
	if a.w.Once {
		if s := LastSuccess(p.Metadata); s != nil {
			return &SkipError{Reason: SkipOnce, Holder: s.Holder, Start: s.End}
		}
	}
	return nil
}

// hostDone is --once-per-host's check before the first acquire: a skip if
// this host's done marker exists, or, if not, an earlier release's marker
// (legacyDoneBlob): a host that finished before an upgrade stays done.
func (a *attempt) hostDone(ctx context.Context) error {
	if a.w.OncePerHost == "" {
		return nil
	}
	name := leaseName(a.b.name)
	for _, blob := range []string{DoneBlob(name, a.w.OncePerHost), legacyDoneBlob(name, a.w.OncePerHost)} {
		m, err := a.b.c.Blob(blob)
		if err != nil {
			return err
		}
		rctx, cancel := a.requestCtx(ctx)
		p, err := m.getProperties(rctx)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return err
		case p.Exists:
			return a.doneSkip()
		}
	}
	return nil
}

func (a *attempt) doneSkip() *SkipError {
	return &SkipError{Reason: SkipOncePerHost, Holder: a.w.OncePerHost}
}

// doneAfter checks hostDone again once l is held: a contender that waited
// while this host's run succeeded does not run again (the marker is written
// before the release). With several slots a listing follows: another slot
// held by this host (a second leaderrun there) sends it back to waiting
// (errHeldNow); two that acquire at once each list after their own claim,
// so one sees the other. Any outcome but going on releases l.
func (a *attempt) doneAfter(ctx context.Context, l *Lease) error {
	if a.w.OncePerHost == "" {
		return nil
	}
	err := a.hostDone(ctx)
	if err == nil && a.e.cfg.Slots > 1 {
		var v *View
		if v, err = a.list(ctx); err == nil && v.heldByHost(a.w.OncePerHost, l.Slot) {
			a.e.log.Debug("another slot is held by this host: waiting", "host", a.w.OncePerHost)
			err = errHeldNow
		}
	}
	if err == nil {
		return nil
	}
	if rerr := l.ReleaseUnused(ctx); rerr != nil {
		a.e.log.Debug("release after the done check failed", "error", rerr)
	}
	return err
}

// MarkDone records that host completed a run with status 0: the empty blob
// ~done/NAME~HOST, created If-None-Match: * (one there is kept). Call it
// while the lease is held, before Release, so the marker exists before
// anyone else can take the slot. Retries transient failures, requestTimeout.
func (l *Lease) MarkDone(ctx context.Context, host string) error {
	m, err := l.b.c.Blob(DoneBlob(l.Name, host))
	if err != nil {
		return err
	}
	return retryTransient(ctx, requestTimeout, func(rctx context.Context) error {
		_, err := m.api.createBlob(rctx)
		if se := asStorageError(err); se != nil && (se.kind == kindExists || se.StatusCode == http.StatusPreconditionFailed) {
			return nil
		}
		return renamed(err, "create done marker")
	})
}

// sameHost reports whether identity holder is host's: host (--identity) or
// host:PID (the default).
func sameHost(holder, host string) bool {
	return holder == host || strings.HasPrefix(holder, host+":")
}
