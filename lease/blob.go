package lease

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/leaderrun/leaderrun/exit"
)

// Blob is one blob of a container (a lease, one of its slots, or a marker)
// and the requests made on it. It is safe for concurrent use.
type Blob struct {
	c    *Container
	name string
	url  string // never with a query string
	api  blobAPI

	// marker is the lease's pause marker (names.go), shared by its slots;
	// nil for other blobs and in unit tests that do not test the pause.
	marker *Blob

	// trigger is the lease's trigger marker (names.go); nil likewise.
	trigger *Blob
	// deputy is the lease's deputy's place (deputy.go); nil for other
	// blobs and in unit tests that do not test the deputy.
	deputy *Blob

	createdHere atomic.Bool // ensureBlob created the blob (CreatedHere)
}

// CreatedHere reports whether this client created the blob: an Acquire
// found it missing and made it, so this is the lease's first use.
func (b *Blob) CreatedHere() bool { return b.createdHere.Load() }

// URL is the blob's URL, without any query string, SAS or credential.
func (b *Blob) URL() string { return b.url }

// Name is the blob's name (for the lease blob, the lease name).
func (b *Blob) Name() string { return b.name }

// Container is the container of the blob.
func (b *Blob) Container() *Container { return b.c }

// State is a blob lease's state as the service reports it, or StateAbsent
// for a blob (or container) that does not exist.
type State string

const (
	StateAvailable State = "available"
	StateLeased    State = "leased"
	StateExpired   State = "expired"
	StateBreaking  State = "breaking"
	StateBroken    State = "broken"
	StateAbsent    State = "absent"
)

// Held reports whether an acquire would fail now: leased or breaking.
func (s State) Held() bool { return s == StateLeased || s == StateBreaking }

// Properties is what the blob says about its lease.
type Properties struct {
	Exists   bool
	State    State
	Metadata map[string]string // keys lowercased; never nil
	Date     time.Time         // the service's Date response header; zero if absent
	Created  time.Time         // when the blob was made (x-ms-creation-time); zero if unknown

	Schedule   string    // --schedule: the schedule recorded; "" if none
	Occurrence time.Time // --schedule: the occurrence last started; zero if none
	Attempt    int       // --schedule: the attempt of Occurrence last started (--retries); 1 if not recorded
	Mode       string    // the kind of line of the latest claim: ModeSchedule, ModeOncePer, ModeOnce; "" for others

	// Parsed from the metadata; zero if absent or malformed.
	Holder        string
	Term          int64
	LeaseDuration time.Duration
	AcquiredAt    time.Time

	LastRun *Run // the run of the lastrun* keys; nil if none was recorded

	Directory bool // a directory of a hierarchical-namespace account (isDirectory), not a lease

	etag string // the blob's ETag when read; "" if absent
}

// Properties reads the blob's properties and metadata (one read request).
// A missing blob or container is not an error: Exists is false and State
// is StateAbsent. Failures are *StorageError; a done ctx returns ctx.Err().
func (b *Blob) Properties(ctx context.Context) (*Properties, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	p, err := b.getProperties(rctx)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return p, err
}

// getProperties is Properties with the caller's deadline only.
func (b *Blob) getProperties(ctx context.Context) (*Properties, error) {
	resp, err := b.api.getProperties(ctx)
	if se := asStorageError(err); se != nil && (se.kind == kindBlobMissing || se.kind == kindContainerMissing) {
		return &Properties{State: StateAbsent, Metadata: map[string]string{}, Date: se.date}, nil
	}
	if err != nil {
		return nil, err
	}
	p := PropertiesOf(State(resp.LeaseState), resp.Metadata, resp.Date)
	p.etag = resp.ETag
	p.Created = resp.Created
	return p, nil
}

// PropertiesOf parses a blob's lease state and metadata, from a read or a
// listing (date is its Date): keys are lowercased, malformed values read as
// absent.
func PropertiesOf(state State, md map[string]string, date time.Time) *Properties {
	return newProperties(cmp.Or(state, StateAvailable), md, date)
}

// isDirectory reports whether a blob's metadata (names lowercased) marks a
// directory of a hierarchical-namespace account, which lists one as a
// zero-length blob with hdi_isfolder=true.
func isDirectory(md map[string]string) bool { return md["hdi_isfolder"] == "true" }

// DirectoryError is the refusal of lease name when a blob named name/…
// made it a directory of a hierarchical-namespace account (a read of it
// says Properties.Directory): what acquiring it returns.
func DirectoryError(name string) *ConfigError { return directoryError(name) }

// directoryError refuses a lease name that a blob named NAME/… made a
// directory of a hierarchical-namespace account.
func directoryError(name string) *ConfigError {
	return configErr("lease name", "%s is a directory on this account (hierarchical namespace: a blob named %s makes it one): "+
		"choose a lease name that no other blob's name begins with followed by '/'", exit.Quote(name), exit.Quote(name+"/…"))
}

// BreakAtPeriodEnd, as BreakLease's period, sends none: the service frees
// the lease when the holder's current period ends, the bound its stop
// deadline is built on, so the holder (its next renewal refused) stops its
// child before anyone else can acquire, whatever duration the metadata
// records, even between a new holder's acquire and its claim.
const BreakAtPeriodEnd time.Duration = -1

// BreakLease breaks the blob's lease, whoever holds it, and returns how
// long until it is broken, as the service says. With BreakAtPeriodEnd that
// is when the holder's period ends (the safe break). With a period (0–60 s,
// whole seconds) it is the shorter of that and what is left of the
// holder's: the old holder's child may still run while a new holder starts;
// 0 breaks it at once. No lease to break is an error wrapping ErrNotLeased.
func (b *Blob) BreakLease(ctx context.Context, period time.Duration) (time.Duration, error) {
	if period != BreakAtPeriodEnd && (period < 0 || period > MaxDuration || period%time.Second != 0) {
		return 0, configErr("break period", "%s: want whole seconds from 0s to 60s", period)
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	seconds := -1 // no period
	if period != BreakAtPeriodEnd {
		seconds = int(period / time.Second)
	}
	resp, err := b.api.breakLease(rctx, seconds)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if se := asStorageError(err); se != nil && (se.kind == kindNotLeased || se.kind == kindBlobMissing || se.kind == kindContainerMissing) {
			return 0, fmt.Errorf("%w: nothing to break at %s", ErrNotLeased, b.url)
		}
		return 0, err
	}
	left := time.Duration(max(resp.LeaseTime, 0)) * time.Second
	b.c.log.Debug("lease broken", "url", b.url, "period", period, "broken_in", left)
	return left, nil
}

// ensureBlob creates the container (when missing) and the zero-length lock
// blob with If-None-Match: *, never overwriting one. Someone else creating
// either first is fine.
func (b *Blob) ensureBlob(ctx context.Context, containerMissing bool) error {
	if containerMissing {
		if _, err := b.api.createContainer(ctx); err == nil {
			b.c.log.Info("created container", "container", b.c.name)
		} else if se := asStorageError(err); se == nil || se.kind != kindExists {
			return err
		}
	}
	_, err := b.api.createBlob(ctx)
	if err == nil {
		b.createdHere.Store(true)
		b.c.log.Info("created lease blob", "url", b.url)
		return nil
	}
	se := asStorageError(err)
	switch {
	case se == nil:
	case se.kind == kindExists, se.StatusCode == http.StatusPreconditionFailed:
		return nil // it exists (possibly leased by whoever created it)
	case se.kind == kindContainerMissing && !containerMissing:
		return b.ensureBlob(ctx, true)
	}
	return err
}
