package lease

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// Sentinel errors, for errors.Is; the typed errors below carry the details.
var (
	// ErrHeld: the lease is held by another holder and was not acquired
	// (no-wait, or the wait timed out). See *HeldError.
	ErrHeld = errors.New("lease: held by another holder")
	// ErrSkipped: a run started within the once-per window. See *SkipError.
	ErrSkipped = errors.New("lease: skipped: a run started within the once-per window")
	// ErrUnavailable: the storage is unreachable, or refused or did not
	// authorize the request. See *StorageError.
	ErrUnavailable = errors.New("lease: storage unavailable")
	// ErrLost: leadership was lost while held. See *LostError.
	ErrLost = errors.New("lease: leadership lost")
	// ErrNotLeased: Break found no lease to break (or no blob).
	ErrNotLeased = errors.New("lease: not leased")
)

// ConfigError is a configuration that cannot work or cannot be safe (an
// invalid name, a missing account, plain http to a host that is not
// loopback, a lease duration outside 15–60 s, …). It holds no secret.
type ConfigError struct {
	Field string // what is wrong: "container name", "lease duration", …
	Err   error
}

func (e *ConfigError) Error() string { return "lease: invalid " + e.Field + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(field, format string, args ...any) *ConfigError {
	return &ConfigError{Field: field, Err: fmt.Errorf(format, args...)}
}

// HeldError reports that the lease is held by someone else; errors.Is(err,
// ErrHeld) is true. Holder, Since and Term come from the metadata, which a
// new holder writes a round trip after its acquire: a read in between shows
// the term before. Stale says when that is known (StaleHolder); a holder
// whose run was cut (lost, killed) left no end: its metadata looks current.
type HeldError struct {
	Holder string    // the holder's identity from the blob's metadata; "" if unknown
	Since  time.Time // when its term began (service time); zero if unknown
	Term   int64     // its term; 0 if unknown
	// Stale: the metadata describes a term whose run has ended, so the
	// holder is not known yet; Holder, Since and Term are that term's.
	Stale bool
	// Reason: WaitOptions.Hold's latest reason, when it kept this Acquire
	// from acquiring; Holder, Since and Term are then the latest read's.
	Reason string
}

func (e *HeldError) Error() string {
	if e.Reason != "" {
		return "lease: not acquired: " + e.Reason
	}
	s, sep := ErrHeld.Error(), ": "
	if e.Stale {
		s += ": not known yet (the metadata still names the previous term"
		sep = ", "
	}
	if e.Holder != "" {
		s += sep + e.Holder
	}
	if e.Term != 0 {
		s += fmt.Sprintf(", term %d", e.Term)
	}
	if e.Stale {
		return s + ", whose run has ended)"
	}
	if !e.Since.IsZero() {
		s += ", since " + formatTime(e.Since)
	}
	return s
}

func (e *HeldError) Unwrap() error { return ErrHeld }

func heldError(p *Properties) *HeldError {
	if p == nil {
		return &HeldError{}
	}
	return &HeldError{Holder: p.Holder, Since: p.AcquiredAt, Term: p.Term, Stale: StaleHolder(p)}
}

// StaleHolder reports whether p, read while the lease is held, is known not
// to name a holder running COMMAND: its recorded run has ended. A holder
// records its end right before it releases, and a claim removes the end in
// the write that names the new holder, so such a read falls between an
// acquire and its claim, or between the recorded end and its release.
func StaleHolder(p *Properties) bool {
	if p == nil || p.LastRun == nil || p.LastRun.Holder != p.Holder {
		return false
	}
	return !p.LastRun.End.IsZero() || p.LastRun.ExitCode != nil
}

// SkipError reports a skip (SkipReason), by default a run started less than
// Window ago by the service's clock. errors.Is(err, ErrSkipped) is true.
type SkipError struct {
	Reason SkipReason
	Holder string        // who started that run (SkipOnce: who succeeded; SkipOncePerHost: the host)
	Start  time.Time     // when it started (service time; SkipOnce: when it ended; zero if unknown)
	Window time.Duration // the once-per window
	// Occurrence: with SkipNotDue, SkipStarted and SkipMissed, the latest
	// occurrence of the schedule (zero with SkipNotDue if none); with
	// SkipRetryLater and SkipRetriesDone, the occurrence that failed.
	Occurrence time.Time
	Attempt    int       // SkipRetryLater, SkipRetriesDone: the attempt of Occurrence last started
	RetryAt    time.Time // SkipRetryLater: when its retry is due (service time)
}

// SkipReason says why a run was skipped.
type SkipReason int

const (
	SkipOncePer     SkipReason = iota // --once-per: a run started within the window
	SkipOnce                          // --once: a run already ended with status 0
	SkipOncePerHost                   // --once-per-host: this host already ended a run with status 0
	SkipNotDue                        // --schedule: no occurrence due (none since the lease blob was made)
	SkipStarted                       // --schedule: the latest occurrence was already started, by anyone
	SkipMissed                        // --schedule: the latest occurrence never started and is past --starting-deadline
	SkipRetryLater                    // --retries: the occurrence last started failed; its retry is not due yet
	SkipRetriesDone                   // --retries: it failed, and no retry is left (or none would start within --starting-deadline)
)

func (e *SkipError) Error() string {
	who := cmp.Or(e.Holder, "unknown holder")
	switch e.Reason {
	case SkipOnce:
		return fmt.Sprintf("lease: skipped: %s already completed a run with status 0 (--once)", who)
	case SkipOncePerHost:
		return fmt.Sprintf("lease: skipped: host %s already completed a run with status 0 (--once-per-host)", who)
	case SkipNotDue:
		return "lease: skipped: no occurrence of the schedule is due"
	case SkipStarted:
		return fmt.Sprintf("lease: skipped: the occurrence %s was already started", formatTime(e.Occurrence))
	case SkipMissed:
		return fmt.Sprintf("lease: skipped: the occurrence %s never started and is past the starting deadline", formatTime(e.Occurrence))
	case SkipRetryLater:
		return fmt.Sprintf("lease: skipped: attempt %d of the occurrence %s failed; the next is due at %s", e.Attempt, formatTime(e.Occurrence), formatTime(e.RetryAt))
	case SkipRetriesDone:
		return fmt.Sprintf("lease: skipped: attempt %d of the occurrence %s failed, and no retry is left", e.Attempt, formatTime(e.Occurrence))
	}
	return fmt.Sprintf("lease: skipped: a run by %s started at %s, within the %s once-per window", who, formatTime(e.Start), e.Window)
}

func (e *SkipError) Unwrap() error { return ErrSkipped }

// StorageError is a failed storage request; errors.Is(err, ErrUnavailable)
// is true. Its message holds the operation, the HTTP status and Azure error
// code when the service answered, a sanitized cause otherwise (no query
// string, SAS signature or key), and a hint when there is one.
type StorageError struct {
	Op         string // "acquire", "renew", "get properties", …
	StatusCode int    // HTTP status; 0 when no answer came
	Code       string // Azure error code (x-ms-error-code); "" if none
	Hint       string // what to do, when known
	Err        error  // sanitized cause when no answer came; nil otherwise

	kind    errKind
	summary string    // what happened when no answer came; "storage unreachable" if empty
	setting setting   // the account's or the container's setting that refused it (settingOf)
	date    time.Time // the answer's Date header; zero if none came
}

// noCredential is the summary when Microsoft Entra ID gave no token.
const noCredential = "no credential"

func (e *StorageError) Error() string {
	what := cmp.Or(e.summary, "storage unreachable")
	if e.StatusCode != 0 {
		what = "storage answered " + e.Status()
	}
	s := "lease: " + e.Op + ": " + what
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// Status is the answer's HTTP status and Azure error code ("403
// AuthorizationPermissionMismatch"), or its status text without a code;
// it means nothing when no answer came (StatusCode 0).
func (e *StorageError) Status() string {
	return fmt.Sprintf("%d %s", e.StatusCode, cmp.Or(e.Code, http.StatusText(e.StatusCode)))
}

func (e *StorageError) Unwrap() error        { return e.Err }
func (e *StorageError) Is(target error) bool { return target == ErrUnavailable }

// Transient reports whether the failure may go away by itself (network,
// timeouts, 408, 429, 5xx), as opposed to a refusal (400, 401, 403, …).
func (e *StorageError) Transient() bool { return e.kind == kindTransient }

// leaseGone: a lease held with a known ID is no longer ours (409 or 412 on
// a lease operation, or 404).
func (e *StorageError) leaseGone() bool {
	switch e.kind {
	case kindConflict, kindHeld, kindNotLeased, kindBlobMissing, kindContainerMissing:
		return true
	}
	return e.StatusCode == http.StatusConflict || e.StatusCode == http.StatusPreconditionFailed ||
		e.StatusCode == http.StatusNotFound
}

// Answer is what the service answered, "503 ServerBusy", or when no answer
// came, what happened instead: "storage unreachable: dial tcp …: connection
// refused". No operation, no hint: for a line that names a cause.
func (e *StorageError) Answer() string {
	if e.StatusCode != 0 {
		return e.Status()
	}
	what := cmp.Or(e.summary, "storage unreachable")
	if e.Err != nil {
		what += ": " + e.Err.Error()
	}
	return what
}

// LostCause says, as a kind, why leadership was lost (LostError.Cause).
type LostCause int

const (
	LostUnknown LostCause = iota // not said (a LostError made outside the keeper)
	// LostRenewals: no renewal succeeded before the stop deadline; the
	// latest failure is Last.
	LostRenewals
	// LostUnrenewed: a deadline passed with no renewal tried since the last
	// success: the process was frozen (SIGSTOP, a frozen VM) or starved.
	LostUnrenewed
	// LostBroken: a renewal was answered LeaseIsBrokenAndCannotBeRenewed:
	// someone broke the lease (leaderrun break, pause --drain).
	LostBroken
	// LostTaken: a renewal was answered LeaseIdMismatchWithLeaseOperation:
	// the lease has another ID now, another holder's.
	LostTaken
	// LostDeleted: a renewal was answered 404: the lease blob, or its
	// container, was deleted.
	LostDeleted
	// LostGone: another 409 or 412 answer to a renewal: the lease is not
	// this holder's any more.
	LostGone
	// LostStopped: the keeper's context ended: nothing renews the lease.
	LostStopped
)

// lostCause is the cause of a loss the service said at once (leaseGone).
func lostCause(se *StorageError) LostCause {
	switch {
	case se.kind == kindBlobMissing || se.kind == kindContainerMissing || se.StatusCode == http.StatusNotFound:
		return LostDeleted
	case se.Code == string(bloberror.LeaseIsBrokenAndCannotBeRenewed):
		return LostBroken
	case se.Code == string(bloberror.LeaseIDMismatchWithLeaseOperation):
		return LostTaken
	}
	return LostGone
}

// LostError says why leadership was lost and when the child must be stopped.
// errors.Is(err, ErrLost) is true.
type LostError struct {
	// Reason: no renewal succeeded in time, or the service said the lease
	// is gone (a *StorageError with the code).
	Reason error
	// Cause is Reason as a kind, for the words of the line that ends the
	// run ("broken by an operator", "renewals failed for 8.5s").
	Cause LostCause
	// Last is the service's answer that ended the lease (LostBroken,
	// LostTaken, LostDeleted, LostGone), or the latest failed renewal
	// (LostRenewals); nil otherwise.
	Last *StorageError
	// Unrenewed is how long no renewal had succeeded when the loss was
	// decided: from the last successful request's send time (t_ok) to
	// StopAt, 8.5 s for the defaults when renewals fail.
	Unrenewed time.Duration
	// StopAt is when the stop signal should be sent: now, or already
	// passed (a monotonic clock reading).
	StopAt time.Time
	// KillBy is when SIGKILL must be sent at the latest, so that the child
	// is dead before t_ok + Duration − 1 s. Monotonic too.
	KillBy time.Time
}

func (e *LostError) Error() string        { return ErrLost.Error() + ": " + e.Reason.Error() }
func (e *LostError) Unwrap() error        { return e.Reason }
func (e *LostError) Is(target error) bool { return target == ErrLost }
