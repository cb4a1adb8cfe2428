// Doctor: `leaderrun doctor`'s checks. Each tries for real what a run will
// need, on a scratch blob beside the lease (NAME~doctor-RANDOM, which
// `list` does not show as a lease) that it deletes at the end, and says
// what the service answered: the credential, the API version, the
// account and the container's settings, each permission, the clock and the
// round trip.

package lease

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/log"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/google/uuid"
)

// CheckStatus is how a check went.
type CheckStatus string

const (
	CheckOK      CheckStatus = "ok"
	CheckWarning CheckStatus = "warning" // a run works, but something is worth knowing or fixing
	CheckFailed  CheckStatus = "failed"  // something a run needs is refused
)

// Check is one line of doctor's report. Detail is one line and holds no
// secret.
type Check struct {
	Name   string
	Status CheckStatus
	Detail string
}

// The checks, in the order of the report.
const (
	CheckCredential = "credential"
	CheckEndpoint   = "endpoint"
	CheckVersion    = "api version"
	CheckAccount    = "account"
	CheckContainer  = "container"
	CheckCreate     = "create"
	CheckRead       = "read"
	CheckLease      = "lease"
	CheckMetadata   = "metadata"
	CheckList       = "list"
	CheckDelete     = "delete"
	CheckClock      = "clock"
	CheckRoundTrip  = "round trip"
	CheckLeaseName  = "lease name"
)

var checkOrder = []string{CheckCredential, CheckEndpoint, CheckVersion, CheckAccount, CheckContainer, CheckCreate,
	CheckRead, CheckLease, CheckMetadata, CheckList, CheckDelete, CheckClock, CheckRoundTrip, CheckLeaseName}

// DoctorConfig is what Doctor checks: the storage (Client, whose Blob is
// the lease name, "" for none) and the timing a run would use.
type DoctorConfig struct {
	Client    ClientConfig
	Duration  time.Duration // the lease duration; 0 means 15s
	KillGrace time.Duration // the child's grace between the stop signal and SIGKILL
}

const (
	doctorScratch = "doctor-"          // the scratch blob is NAME~doctor-RANDOM
	doctorNoName  = "leaderrun-doctor" // NAME when none is given
	doctorReads   = 10                 // reads timed for the round trip
	// skewWarn: a clock further off than this from the service's is
	// not kept in time (the Date header has whole seconds).
	skewWarn = 10 * time.Second
)

// Doctor tries every request a run makes on a scratch blob beside the lease
// (created, leased, written, listed, deleted) and reports, one Check each,
// what the service said. A configuration it cannot accept (names, duration,
// endpoint, credentials) is a *ConfigError; whatever the storage answers,
// or does not, is a Check. It leaves no blob behind unless deleting it is
// refused, which the delete check says. With Microsoft Entra ID it listens
// to the Azure SDK's log while it runs, to name the credential that
// DefaultAzureCredential used: do not run two at once.
func Doctor(ctx context.Context, cfg DoctorConfig) ([]Check, error) {
	lc, err := Config{Duration: cfg.Duration, KillGrace: cfg.KillGrace, Identity: doctorNoName}.withDefaults()
	if err != nil {
		return nil, err
	}
	name := cfg.Client.Blob
	var c *Client
	if name != "" {
		c, err = NewClient(cfg.Client)
	} else {
		c, err = NewContainerClient(cfg.Client)
	}
	if se := asStorageError(err); se != nil {
		// No Microsoft Entra ID credential could be made on this host.
		return []Check{{Name: CheckCredential, Status: CheckFailed,
			Detail: "Microsoft Entra ID through DefaultAzureCredential: " + answerText(se)}}, nil
	}
	if err != nil {
		return nil, err
	}
	src, err := pickCredentials(cfg.Client)
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	s, err := c.Sibling(cmp.Or(name, doctorNoName) + MarkerSep + doctorScratch + hex.EncodeToString(b[:]))
	if err != nil {
		return nil, err
	}
	d := &doctor{c: c, s: s, name: name, cfg: lc, src: src, sas: sasFields(src.sas), results: map[string]Check{}}
	if src.auth == authEntra {
		stop := d.watchCredential()
		defer stop()
	}
	d.run(ctx)
	return d.report(), nil
}

// doctor is one run of Doctor.
type doctor struct {
	c, s    *Client // the lease NAME (or the container) and the scratch blob
	name    string  // the lease name; "" for none
	cfg     Config  // the run's timing, defaults applied
	src     credentialSource
	sas     url.Values // the SAS token's fields, signature left out; nil without one
	results map[string]Check

	mu        sync.Mutex
	entraWith string // the credential DefaultAzureCredential used, from its log

	skews   []time.Duration // the service's Date minus this host's clock, per answer
	version string          // the API version sent

	containerUnread *StorageError // the refusal of the container's properties
}

func (d *doctor) set(name string, status CheckStatus, format string, args ...any) {
	d.results[name] = Check{Name: name, Status: status, Detail: fmt.Sprintf(format, args...)}
}

func (d *doctor) report() []Check {
	var out []Check
	for _, n := range checkOrder {
		if c, ok := d.results[n]; ok {
			out = append(out, c)
		}
	}
	return out
}

// reply is one request's outcome.
type reply struct {
	rtt time.Duration
	err *StorageError // nil if it succeeded
}

// answered reports whether the service answered (a success or a refusal).
func (r reply) answered() bool { return r.err == nil || r.err.StatusCode != 0 }

// do sends one request, bounded by requestTimeout, and notes the clock and
// the API version of its answer. op names it in errors.
func (d *doctor) do(ctx context.Context, op string, f func(context.Context) error) reply {
	var raw *http.Response
	rctx, cancel := context.WithTimeout(policy.WithCaptureResponse(ctx, &raw), requestTimeout)
	defer cancel()
	sent := time.Now()
	err := f(rctx)
	r := reply{rtt: time.Since(sent)}
	if err != nil {
		r.err = d.s.mapError(op, err)
	}
	if raw != nil {
		if raw.Request != nil && d.version == "" {
			d.version = headerValue(raw.Request.Header, headerVersion)
		}
		if date := answerDate(raw); !date.IsZero() {
			// Date has whole seconds: the service's clock was within the
			// second after it, at about the middle of the round trip.
			d.skews = append(d.skews, date.Add(500*time.Millisecond).Sub(sent.Add(r.rtt/2)))
		}
	}
	return r
}

func (d *doctor) run(ctx context.Context) {
	if !d.probe(ctx) {
		return
	}
	d.account(ctx)
	usable, writable := d.container(ctx)
	if !usable {
		d.clock()
		return
	}
	created := false
	if writable {
		created = d.create(ctx)
	} else {
		d.notTried("a scratch blob could not be deleted from this container", CheckCreate)
	}
	d.reads(ctx)
	if created {
		d.leaseAndMetadata(ctx)
		d.list(ctx, true)
		d.remove(ctx)
		d.containerWritten()
	} else {
		if writable {
			d.notTried("no scratch blob (create was refused)", CheckLease, CheckMetadata, CheckDelete)
		} else {
			d.notTried("no scratch blob", CheckLease, CheckMetadata, CheckDelete)
		}
		d.list(ctx, false)
	}
	d.clock()
	d.leaseName(ctx)
}

// notTried reports checks that could not be tried, and why.
func (d *doctor) notTried(why string, checks ...string) {
	for _, c := range checks {
		d.set(c, CheckWarning, "not tried: %s", why)
	}
}

// probe reads the scratch blob, which does not exist yet: the first answer
// says whether the credential is accepted and the API version understood.
// It reports whether to go on.
func (d *doctor) probe(ctx context.Context) bool {
	r := d.do(ctx, "get properties", func(ctx context.Context) error { _, err := d.s.api.getProperties(ctx); return err })
	se := r.err
	switch {
	case se == nil || se.kind == kindBlobMissing || se.kind == kindContainerMissing:
	case isVersionRefusal(se):
		d.set(CheckCredential, CheckWarning, "%s: not checked (the service refused the API version first)", d.credential())
		d.set(CheckVersion, CheckFailed, "refused: %s", answerText(se))
		return false
	case se.summary == noCredential || authRefused(se):
		d.set(CheckCredential, CheckFailed, "%s: refused: %s", d.credential(), answerText(se))
		d.clock()
		return false
	case !r.answered():
		d.set(CheckCredential, CheckWarning, "%s: not checked (no answer)", d.credential())
		d.set(CheckEndpoint, CheckFailed, "%s: %s", d.s.containerURL, answerText(se))
		return false
	case permissionRefused(se):
		d.set(CheckRead, CheckFailed, "refused: %s", d.refusal(se, "read (r)"))
	default:
		d.set(CheckCredential, CheckWarning, "%s: not checked (unexpected answer)", d.credential())
		d.set(CheckEndpoint, CheckFailed, "%s answered %s", d.s.containerURL, answerText(se))
		return false
	}
	d.set(CheckCredential, CheckOK, "%s: accepted", d.credential())
	d.set(CheckEndpoint, CheckOK, "%s", d.s.containerURL)
	v := cmp.Or(d.version, "the SDK's")
	d.set(CheckVersion, CheckOK, "%s accepted (the Blob service API version this leaderrun sends)", v)
	return true
}

// account reads Get Account Information: kind, SKU, hierarchical namespace.
func (d *doctor) account(ctx context.Context) {
	var ai accountInfo
	r := d.do(ctx, "get account information", func(ctx context.Context) error {
		var err error
		ai, err = d.s.api.(accountAPI).accountInfo(ctx)
		return err
	})
	if r.err != nil {
		d.set(CheckAccount, CheckWarning, "not known: Get Account Information answered %s (runs do not need it)", answerText(r.err))
		return
	}
	desc := strings.Join(nonEmpty(ai.Kind, ai.SKU), ", ")
	if desc == "" {
		desc = "kind not said"
	}
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

// container reads Get Container Properties: an immutability policy or a
// legal hold refuses every write a run makes after its first. A missing
// container is created, as a run would. It reports whether to go on, and
// whether a scratch blob could be deleted again (writable).
func (d *doctor) container(ctx context.Context) (usable, writable bool) {
	var ci containerInfo
	r := d.do(ctx, "get container properties", func(ctx context.Context) error {
		var err error
		ci, err = d.s.api.(accountAPI).containerInfo(ctx)
		return err
	})
	switch {
	case r.err != nil && r.err.kind == kindContainerMissing:
		c := d.do(ctx, "create container", func(ctx context.Context) error { _, err := d.s.api.createContainer(ctx); return err })
		if c.err != nil && c.err.kind != kindExists {
			d.set(CheckContainer, CheckFailed, "%s does not exist, and creating it was refused: %s",
				d.c.container, d.refusal(c.err, "create (c) on containers, in an account SAS (srt=c)"))
			return false, false
		}
		d.set(CheckContainer, CheckOK, "%s did not exist: created, as the first run would have", d.c.container)
	case r.err != nil:
		d.set(CheckContainer, CheckWarning, "cannot tell whether %s has an immutability policy or a legal hold: %s",
			d.c.container, answerText(r.err))
		d.containerUnread = r.err
	case ci.LegalHold || ci.ImmutabilityPolicy:
		var what []string
		if ci.ImmutabilityPolicy {
			what = append(what, "an immutability policy")
		}
		if ci.LegalHold {
			what = append(what, "a legal hold")
		}
		d.set(CheckContainer, CheckFailed, "%s has %s: %s; %s", d.c.container, strings.Join(what, " and "), immutableCause, immutableFix)
		return true, false
	default:
		d.set(CheckContainer, CheckOK, "%s: no immutability policy, no legal hold", d.c.container)
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
		"its properties were not readable: %s)", d.c.container, answerText(d.containerUnread))
}

// create creates the scratch blob as a run creates a lease blob.
func (d *doctor) create(ctx context.Context) bool {
	r := d.do(ctx, "create blob", func(ctx context.Context) error { _, err := d.s.api.createBlob(ctx); return err })
	if r.err != nil {
		d.set(CheckCreate, CheckFailed, "refused: %s", d.refusal(r.err, "create (c) or write (w)"))
		return false
	}
	d.set(CheckCreate, CheckOK, "allowed: created %s", d.s.blobName)
	return true
}

// reads reads the scratch blob doctorReads times, for the read check and
// the round trip.
func (d *doctor) reads(ctx context.Context) {
	var (
		rtts    []time.Duration
		refused *StorageError
	)
	for range doctorReads {
		r := d.do(ctx, "get properties", func(ctx context.Context) error { _, err := d.s.api.getProperties(ctx); return err })
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

// roundTrip reports the reads' p50 and p95, and what a renewal has at the
// run's lease duration: each try is cut at renewTry, and tries go on for
// the window before the stop signal.
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

// leaseAndMetadata acquires the scratch blob's lease for the run's
// duration, renews it, writes metadata with the lease ID as a claim does,
// and releases it (breaking it if the release is refused, so that the
// blob can be deleted).
func (d *doctor) leaseAndMetadata(ctx context.Context) {
	id := uuid.NewString()
	var etag string
	r := d.do(ctx, "acquire", func(ctx context.Context) error {
		ans, err := d.s.api.acquireLease(ctx, id, int(d.cfg.Duration/time.Second))
		etag = ans.ETag
		return err
	})
	if r.err != nil {
		d.set(CheckLease, CheckFailed, "acquire refused: %s", d.refusal(r.err, "write (w)"))
		d.set(CheckMetadata, CheckWarning, "not tried: the lease was refused")
		return
	}
	renew := d.do(ctx, "renew", func(ctx context.Context) error { _, err := d.s.api.renewLease(ctx, id); return err })
	md := d.do(ctx, "set metadata", func(ctx context.Context) error {
		_, err := d.s.api.setMetadata(ctx, id, etag, map[string]string{"doctor": "1"})
		return err
	})
	if md.err != nil {
		d.set(CheckMetadata, CheckFailed, "refused: %s", d.refusal(md.err, "write (w)"))
	} else {
		d.set(CheckMetadata, CheckOK, "allowed (with the lease ID and If-Match, as a claim writes)")
	}
	rel := d.do(ctx, "release", func(ctx context.Context) error { _, err := d.s.api.releaseLease(ctx, id); return err })
	switch {
	case renew.err != nil:
		d.set(CheckLease, CheckFailed, "acquire allowed, renew refused: %s", d.refusal(renew.err, "write (w)"))
	case rel.err != nil:
		d.set(CheckLease, CheckFailed, "acquire and renew allowed, release refused: %s", d.refusal(rel.err, "write (w)"))
	default:
		d.set(CheckLease, CheckOK, "acquire (%s), renew and release allowed", d.cfg.Duration)
	}
	if rel.err != nil {
		d.do(ctx, "break", func(ctx context.Context) error { _, err := d.s.api.breakLease(ctx, 0); return err })
	}
}

// list lists the scratch blob's name, as the slot poll, list, status and
// completion list the lease's.
func (d *doctor) list(ctx context.Context, created bool) {
	var found bool
	r := d.do(ctx, "list blobs", func(ctx context.Context) error {
		blobs, _, err := d.s.lister.listBlobs(ctx, d.s.blobName, false)
		found = slices.ContainsFunc(blobs, func(b listedBlob) bool { return b.Name == d.s.blobName })
		return err
	})
	const who = "list, status's slots and pause, completion and runs with --slots above 1 need it"
	switch {
	case r.err != nil:
		d.set(CheckList, CheckWarning, "refused: %s; %s", d.refusal(r.err, "list (l), in a container or account SAS"), who)
	case created && !found:
		d.set(CheckList, CheckWarning, "allowed, but the listing did not show %s", d.s.blobName)
	default:
		d.set(CheckList, CheckOK, "allowed")
	}
}

// remove deletes the scratch blob.
func (d *doctor) remove(ctx context.Context) {
	r := d.do(ctx, "delete blob", func(ctx context.Context) error { _, err := d.s.api.deleteBlob(ctx); return err })
	if r.err != nil && r.err.kind != kindBlobMissing {
		d.set(CheckDelete, CheckWarning, "refused: %s; resume needs it, and the scratch blob %s is left behind: delete it with a credential that may",
			d.refusal(r.err, "delete (d)"), d.s.URL())
		return
	}
	d.set(CheckDelete, CheckOK, "allowed: %s deleted", d.s.blobName)
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
	var p *Properties
	r := d.do(ctx, "get properties", func(ctx context.Context) error {
		var err error
		p, err = d.c.getProperties(ctx)
		return err
	})
	switch {
	case r.err != nil:
		d.set(CheckLeaseName, CheckWarning, "%s: cannot read it: %s", d.name, answerText(r.err))
	case p.Directory:
		d.set(CheckLeaseName, CheckFailed, "%s", strings.TrimPrefix(directoryError(d.name).Error(), "lease: "))
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

// credential names the credential in use, and where it came from, without
// any secret.
func (d *doctor) credential() string {
	cs := d.src.fromConnString
	switch d.src.auth {
	case authSharedKey:
		from := "AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY"
		if cs {
			from = "AZURE_STORAGE_CONNECTION_STRING"
		}
		return fmt.Sprintf("shared key of account %s, from %s", d.src.account, from)
	case authSAS:
		from := "AZURE_STORAGE_SAS_TOKEN"
		if cs {
			from = "AZURE_STORAGE_CONNECTION_STRING"
		}
		var parts []string
		if sp := d.sas.Get("sp"); sp != "" {
			parts = append(parts, "permissions "+sp)
		}
		if se := d.sas.Get("se"); se != "" {
			parts = append(parts, "expires "+se)
		}
		if d.sas.Get("skoid") != "" {
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

// entraSource says which of DefaultAzureCredential's sources a credential
// type is.
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

// watchCredential listens to the Azure SDK's log for the line in which
// DefaultAzureCredential says which source authenticated. The SDK's log
// is process-wide; stop ends the listening.
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

// sasFields parses a SAS token's query without its signature; nil if
// there is none.
func sasFields(sas string) url.Values {
	if sas == "" {
		return nil
	}
	v, err := url.ParseQuery(sas)
	if err != nil {
		return nil
	}
	v.Del("sig")
	return v
}

// authRefused: the service did not accept the credential at all (a bad
// key or signature, shared-key access disabled, a token for another
// tenant, the account's network rules), as opposed to a permission the
// credential lacks.
func authRefused(se *StorageError) bool {
	return (se.StatusCode == http.StatusUnauthorized || se.StatusCode == http.StatusForbidden) && !permissionRefused(se)
}

// permissionRefused: the credential was accepted and lacks a permission.
func permissionRefused(se *StorageError) bool {
	switch bloberror.Code(se.Code) {
	case bloberror.AuthorizationPermissionMismatch, bloberror.AuthorizationResourceTypeMismatch,
		bloberror.AuthorizationServiceMismatch:
		return se.StatusCode == http.StatusForbidden
	}
	return false
}

func isVersionRefusal(se *StorageError) bool { return se.setting == settingVersion }

// answerText is what the service answered, with the cause and the fix
// when they are known; the sanitized failure when no answer came.
func answerText(se *StorageError) string {
	if se.StatusCode == 0 {
		return strings.TrimPrefix(se.Error(), "lease: ")
	}
	s := fmt.Sprintf("%d %s", se.StatusCode, cmp.Or(se.Code, http.StatusText(se.StatusCode)))
	if se.Hint != "" {
		s += " (" + se.Hint + ")"
	}
	return s
}

// refusal is a refused request's detail: the answer and, when the
// credential lacks a permission, what grants it. sasPerm is the SAS
// permission the request needs.
func (d *doctor) refusal(se *StorageError, sasPerm string) string {
	if !permissionRefused(se) {
		return answerText(se)
	}
	what := fmt.Sprintf("%d %s", se.StatusCode, se.Code)
	switch d.src.auth {
	case authSAS:
		return fmt.Sprintf("%s: the SAS token lacks the permission %s", what, sasPerm)
	case authEntra:
		return fmt.Sprintf("%s: grant this identity the 'Storage Blob Data Contributor' role on container %s (or on the account)",
			what, d.c.container)
	}
	return answerText(se)
}
