package doctor

// scratch.go: the checks on the scratch blob (create, read, round trip,
// lease, metadata, list, delete), of the clock and of the lease name, and
// how doctor words a credential and a refusal.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/log"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/google/uuid"

	"github.com/leaderrun/leaderrun/lease"
)

// create creates the scratch blob as a run creates a lease blob.
func (d *doctor) create(ctx context.Context) bool {
	_, r := send(ctx, d, "create blob", onlyErr(d.s.Create))
	if r.err != nil {
		d.set(CheckCreate, CheckFailed, "refused: %s", d.refusal(r.err, "create (c) or write (w)"))
		return false
	}
	d.set(CheckCreate, CheckOK, "allowed: created %s", d.s.Name())
	return true
}

// reads reads the scratch blob timedReads times (read, round trip).
func (d *doctor) reads(ctx context.Context) {
	var (
		rtts    []time.Duration
		refused *lease.StorageError
	)
	for range timedReads {
		_, r := send(ctx, d, "get properties", onlyErr(d.s.Read))
		switch {
		case r.err == nil || r.err.BlobMissing():
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
	window, try := d.cfg.RenewTiming()
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

// leaseAndMetadata acquires the scratch blob's lease for the run's
// duration, renews it, writes metadata as a claim does, and releases it
// (breaks it if the release is refused, so that the blob can be deleted).
func (d *doctor) leaseAndMetadata(ctx context.Context) {
	id := uuid.NewString()
	etag, r := send(ctx, d, "acquire", func(ctx context.Context) (string, error) {
		return d.s.AcquireLease(ctx, id, d.cfg.Duration)
	})
	if r.err != nil {
		d.set(CheckLease, CheckFailed, "acquire refused: %s", d.refusal(r.err, "write (w)"))
		d.set(CheckMetadata, CheckWarning, "not tried: the lease was refused")
		return
	}
	_, renew := send(ctx, d, "renew", onlyErr(func(ctx context.Context) error { return d.s.RenewLease(ctx, id) }))
	_, md := send(ctx, d, "set metadata", onlyErr(func(ctx context.Context) error {
		return d.s.SetMetadata(ctx, map[string]string{"doctor": "1"}, id, etag)
	}))
	if md.err != nil {
		d.set(CheckMetadata, CheckFailed, "refused: %s", d.refusal(md.err, "write (w)"))
	} else {
		d.set(CheckMetadata, CheckOK, "allowed (with the lease ID and If-Match, as a claim writes)")
	}
	_, rel := send(ctx, d, "release", onlyErr(func(ctx context.Context) error { return d.s.ReleaseLease(ctx, id) }))
	switch {
	case renew.err != nil:
		d.set(CheckLease, CheckFailed, "acquire allowed, renew refused: %s", d.refusal(renew.err, "write (w)"))
	case rel.err != nil:
		d.set(CheckLease, CheckFailed, "acquire and renew allowed, release refused: %s", d.refusal(rel.err, "write (w)"))
	default:
		d.set(CheckLease, CheckOK, "acquire (%s), renew and release allowed", d.cfg.Duration)
	}
	if rel.err != nil {
		send(ctx, d, "break", func(ctx context.Context) (time.Duration, error) { return d.s.BreakLease(ctx, 0) })
	}
}

// list lists the scratch blob's name, as the slot poll, list, status and
// completion list the lease's.
func (d *doctor) list(ctx context.Context, created bool) {
	names, r := send(ctx, d, "list blobs", func(ctx context.Context) ([]string, error) { return d.c.ListNames(ctx, d.s.Name()) })
	found := slices.Contains(names, d.s.Name())
	const who = "list, status's slots and pause, completion and runs with --slots above 1 need it"
	switch {
	case r.err != nil:
		d.set(CheckList, CheckWarning, "refused: %s; %s", d.refusal(r.err, "list (l), in a container or account SAS"), who)
	case created && !found:
		d.set(CheckList, CheckWarning, "allowed, but the listing did not show %s", d.s.Name())
	default:
		d.set(CheckList, CheckOK, "allowed")
	}
}

func (d *doctor) remove(ctx context.Context) {
	_, r := send(ctx, d, "delete blob", onlyErr(d.s.Delete))
	if r.err != nil && !r.err.BlobMissing() {
		d.set(CheckDelete, CheckWarning, "refused: %s; resume needs it, and the scratch blob %s is left behind: delete it with a credential that may",
			d.refusal(r.err, "delete (d)"), d.s.URL())
		return
	}
	d.set(CheckDelete, CheckOK, "allowed: %s deleted", d.s.Name())
}

// clock compares this host's clock with the service's Date headers.
func (d *doctor) clock() {
	if len(d.skews) == 0 {
		return
	}
	skew := percentile(d.skews, 50).Round(time.Second)
	abs, side := skew, "behind"
	if skew < 0 {
		abs, side = -skew, "ahead of"
	}
	if abs < skewWarn {
		d.set(CheckClock, CheckOK, "within %s of the service's (Date, whole seconds)", max(abs, time.Second))
		return
	}
	d.set(CheckClock, CheckWarning, "this host's clock is %s %s the service's: leaderrun decides by the service's clock, "+
		"but key-signed requests are refused beyond 15 minutes and Entra ID tokens beyond about 5; check time sync (timedatectl, chronyc tracking)",
		abs, side)
}

// leaseName reads the lease NAME itself: a directory of a hierarchical
// namespace cannot be a lease.
func (d *doctor) leaseName(ctx context.Context) {
	if d.name == "" {
		return
	}
	p, r := send(ctx, d, "get properties", d.lease.Properties)
	switch {
	case r.err != nil:
		d.set(CheckLeaseName, CheckWarning, "%s: cannot read it: %s", d.name, answerText(r.err))
	case p.Directory:
		d.set(CheckLeaseName, CheckFailed, "%s", strings.TrimPrefix(lease.DirectoryError(d.name).Error(), "lease: "))
	case !p.Exists:
		d.set(CheckLeaseName, CheckOK, "%s does not exist yet: the first run creates it", d.name)
	default:
		detail := fmt.Sprintf("%s: %s", d.name, p.State)
		if p.Term > 0 {
			detail += fmt.Sprintf(", term %d", p.Term)
		}
		if p.Holder != "" {
			detail += ", holder " + p.Holder
		}
		d.set(CheckLeaseName, CheckOK, "%s", detail)
	}
}

// credential names the credential in use and where it came from.
func (d *doctor) credential() string {
	cred := d.cred
	from := map[lease.CredentialKind]string{
		lease.CredentialSharedKey: "AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY", lease.CredentialSAS: "AZURE_STORAGE_SAS_TOKEN",
	}[cred.Kind]
	if cred.FromConnectionString {
		from = "AZURE_STORAGE_CONNECTION_STRING"
	}
	switch cred.Kind {
	case lease.CredentialSharedKey:
		return fmt.Sprintf("shared key of account %s, from %s", cred.Account, from)
	case lease.CredentialSAS:
		var parts []string // the token's fields, if it parses; it has no signature
		if sp := cred.SAS.Get("sp"); sp != "" {
			parts = append(parts, "permissions "+sp)
		}
		if se := cred.SAS.Get("se"); se != "" {
			parts = append(parts, "expires "+se)
		}
		if cred.SAS.Get("skoid") != "" {
			parts = append(parts, "user delegation")
		}
		desc := "SAS token from " + from
		if len(parts) > 0 {
			desc += " (" + strings.Join(parts, ", ") + ")"
		}
		return desc
	}
	d.mu.Lock()
	with := d.entraWith
	d.mu.Unlock()
	desc := "Microsoft Entra ID through DefaultAzureCredential"
	if with != "" {
		desc += ": " + entraSource(with)
	}
	return desc
}

// entraSource names DefaultAzureCredential's source of a credential type.
func entraSource(typeName string) string {
	names := map[string]string{
		"EnvironmentCredential":       "service principal from AZURE_CLIENT_ID and its secret or certificate",
		"WorkloadIdentityCredential":  "workload identity",
		"ManagedIdentityCredential":   "managed identity",
		"AzureCLICredential":          "Azure CLI login",
		"AzureDeveloperCLICredential": "Azure Developer CLI login",
		"AzurePowerShellCredential":   "Azure PowerShell login",
	}
	if n, ok := names[typeName]; ok {
		return n + " (" + typeName + ")"
	}
	return typeName
}

// watchCredential listens to the Azure SDK's process-wide log for the
// source DefaultAzureCredential authenticated with, until stop.
func (d *doctor) watchCredential() (stop func()) {
	log.SetEvents(azidentity.EventAuthentication)
	log.SetListener(func(ev log.Event, msg string) {
		if ev != azidentity.EventAuthentication {
			return
		}
		if _, with, ok := strings.Cut(msg, " authenticated with "); ok {
			d.mu.Lock()
			d.entraWith = strings.TrimSpace(with)
			d.mu.Unlock()
		}
	})
	return func() {
		log.SetListener(nil)
		log.SetEvents()
	}
}

// answerText is what the service answered, with the cause and the fix
// when they are known; the sanitized failure when no answer came.
func answerText(se *lease.StorageError) string {
	if se.StatusCode == 0 {
		return strings.TrimPrefix(se.Error(), "lease: ")
	}
	s := se.Status()
	if se.Hint != "" {
		s += " (" + se.Hint + ")"
	}
	return s
}

// refusal is a refused request's detail: the answer and, when the
// credential lacks a permission, what grants it (sasPerm for a SAS).
func (d *doctor) refusal(se *lease.StorageError, sasPerm string) string {
	if !se.LacksPermission() {
		return answerText(se)
	}
	what := se.Status()
	switch d.cred.Kind {
	case lease.CredentialSAS:
		return fmt.Sprintf("%s: the SAS token lacks the permission %s", what, sasPerm)
	case lease.CredentialEntraID:
		return fmt.Sprintf("%s: grant this identity the 'Storage Blob Data Contributor' role on container %s (or on the account)",
			what, d.containerName)
	}
	return answerText(se)
}
