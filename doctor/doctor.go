package doctor

// doctor.go: the run and the checks of the credential, the endpoint, the
// API version, the account and the container.

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/leaderrun/leaderrun/lease"
)

// CheckStatus is how a check went.
type CheckStatus string

const (
	CheckOK      CheckStatus = "ok"
	CheckWarning CheckStatus = "warning" // a run works, but something is worth knowing or fixing
	CheckFailed  CheckStatus = "failed"  // something a run needs is refused
)

// Check is one line of doctor's report. Detail holds no secret.
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

// Config is what Run checks: the storage (Client.Blob is the lease name,
// "" for none) and the timing a run would use.
type Config struct {
	Client    lease.ClientConfig
	Duration  time.Duration // the lease duration; 0 means 15s
	KillGrace time.Duration // the child's grace between the stop signal and SIGKILL
}

const (
	scratchMarker = "doctor-"          // the scratch blob is NAME~doctor-RANDOM
	noName        = "leaderrun-doctor" // NAME when none is given
	timedReads    = 10                 // reads timed for the round trip
	// skewWarn: a clock further off than this is not kept in time (the
	// Date header has whole seconds).
	skewWarn = 10 * time.Second
)

// Run reports, one Check each, what the service said to every request a
// run makes. A configuration it cannot accept is a *lease.ConfigError;
// whatever the storage answers, or does not, is a Check. It leaves no blob
// behind unless the delete is refused. With Microsoft Entra ID it listens
// to the Azure SDK's process-wide log (watchCredential): do not run two at
// once.
func Run(ctx context.Context, cfg Config) ([]Check, error) {
	lc, err := lease.Config{Duration: cfg.Duration, KillGrace: cfg.KillGrace, Identity: noName}.Check()
	if err != nil {
		return nil, err
	}
	name := cfg.Client.Blob
	var (
		c  *lease.Container
		lb *lease.Blob
	)
	if name != "" {
		if lb, err = lease.NewLeaseBlob(cfg.Client); err == nil {
			c = lb.Container()
		}
	} else {
		c, err = lease.NewContainer(cfg.Client)
	}
	var se *lease.StorageError
	if errors.As(err, &se) {
		// No Microsoft Entra ID credential could be made on this host.
		return []Check{{Name: CheckCredential, Status: CheckFailed,
			Detail: "Microsoft Entra ID through DefaultAzureCredential: " + answerText(se)}}, nil
	}
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	s, err := c.Blob(cmp.Or(name, noName) + lease.MarkerSep + scratchMarker + hex.EncodeToString(b[:]))
	if err != nil {
		return nil, err
	}
	d := &doctor{c: c, cred: c.Credential(), containerName: cfg.Client.Container, lease: lb, s: s, name: name, cfg: lc,
		results: map[string]Check{}}
	if d.cred.Kind == lease.CredentialEntraID {
		stop := d.watchCredential()
		defer stop()
	}
	d.run(ctx)
	return d.report(), nil
}

// doctor is one Run.
type doctor struct {
	c             *lease.Container
	cred          lease.Credential // the credential c's requests carry
	containerName string           // the container's name
	lease         *lease.Blob      // the lease NAME; nil for none
	s             *lease.Blob      // the scratch blob
	name          string           // the lease name; "" for none
	cfg           lease.Config     // the run's timing, defaults applied
	results       map[string]Check

	mu        sync.Mutex
	entraWith string // the credential DefaultAzureCredential used, from its log

	skews   []time.Duration // the service's Date minus this host's clock, per answer
	version string          // the API version sent

	containerUnread *lease.StorageError // the refusal of the container's properties
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
	err *lease.StorageError // nil if it succeeded
}

// send sends one of d's requests (each of lease's is bounded by its own
// timeout) and notes the clock and the API version of its answer. op names
// it in an error that lease did not make: the end of ctx.
func send[T any](ctx context.Context, d *doctor, op string, f func(context.Context) (T, error)) (T, reply) {
	var raw *http.Response
	sent := time.Now()
	v, err := f(policy.WithCaptureResponse(ctx, &raw))
	r := reply{rtt: time.Since(sent)}
	if err != nil && !errors.As(err, &r.err) {
		r.err = &lease.StorageError{Op: op, Err: err} // no answer came
	}
	if raw != nil && raw.Request != nil && d.version == "" {
		d.version = lease.HeaderValue(raw.Request.Header, headerVersion)
	}
	if date := lease.AnswerDate(raw); !date.IsZero() {
		// Date has whole seconds: the service's clock was within the
		// second after it, at about the middle of the round trip.
		d.skews = append(d.skews, date.Add(500*time.Millisecond).Sub(sent.Add(r.rtt/2)))
	}
	return v, r
}

// onlyErr adapts a request that returns only an error to send.
func onlyErr(f func(context.Context) error) func(context.Context) (struct{}, error) {
	return func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) }
}

// headerVersion is the request header that carries the API version.
const headerVersion = "x-ms-version"

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
	created := writable && d.create(ctx)
	if !writable {
		d.notTried("a scratch blob could not be deleted from this container", CheckCreate)
	}
	d.reads(ctx)
	if created {
		d.leaseAndMetadata(ctx)
		d.list(ctx, true)
		d.remove(ctx)
		d.containerWritten()
	} else {
		why := "no scratch blob"
		if writable {
			why += " (create was refused)"
		}
		d.notTried(why, CheckLease, CheckMetadata, CheckDelete)
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

// probe reads the scratch blob, not made yet: the answer says whether the
// credential and the API version are accepted. It reports whether to go on.
func (d *doctor) probe(ctx context.Context) bool {
	_, r := send(ctx, d, "get properties", onlyErr(d.s.Read))
	se := r.err
	switch {
	case se == nil || se.BlobMissing() || se.ContainerMissing():
	case se.VersionRefused():
		d.set(CheckCredential, CheckWarning, "%s: not checked (the service refused the API version first)", d.credential())
		d.set(CheckVersion, CheckFailed, "refused: %s", answerText(se))
		return false
	case se.CredentialRefused():
		d.set(CheckCredential, CheckFailed, "%s: refused: %s", d.credential(), answerText(se))
		d.clock()
		return false
	case se.StatusCode == 0: // no answer
		d.set(CheckCredential, CheckWarning, "%s: not checked (no answer)", d.credential())
		d.set(CheckEndpoint, CheckFailed, "%s: %s", d.c.URL(), answerText(se))
		return false
	case se.LacksPermission():
		d.set(CheckRead, CheckFailed, "refused: %s", d.refusal(se, "read (r)"))
	default:
		d.set(CheckCredential, CheckWarning, "%s: not checked (unexpected answer)", d.credential())
		d.set(CheckEndpoint, CheckFailed, "%s answered %s", d.c.URL(), answerText(se))
		return false
	}
	d.set(CheckCredential, CheckOK, "%s: accepted", d.credential())
	d.set(CheckEndpoint, CheckOK, "%s", d.c.URL())
	d.set(CheckVersion, CheckOK, "%s accepted (the Blob service API version this leaderrun sends)", cmp.Or(d.version, "the SDK's"))
	return true
}

// account reads Get Account Information: kind, SKU, hierarchical namespace.
func (d *doctor) account(ctx context.Context) {
	ai, r := send(ctx, d, "get account information", d.c.AccountInfo)
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
	ci, r := send(ctx, d, "get container properties", d.c.Settings)
	switch {
	case r.err != nil && r.err.ContainerMissing():
		_, c := send(ctx, d, "create container", onlyErr(d.c.Create))
		if c.err != nil && !c.err.AlreadyExists() {
			d.set(CheckContainer, CheckFailed, "%s does not exist, and creating it was refused: %s",
				d.containerName, d.refusal(c.err, "create (c) on containers, in an account SAS (srt=c)"))
			return false, false
		}
		d.set(CheckContainer, CheckOK, "%s did not exist: created, as the first run would have", d.containerName)
	case r.err != nil:
		d.set(CheckContainer, CheckWarning, "cannot tell whether %s has an immutability policy or a legal hold: %s",
			d.containerName, answerText(r.err))
		d.containerUnread = r.err
	case ci.WritesRefused() != "":
		d.set(CheckContainer, CheckFailed, "%s has %s", d.containerName, ci.WritesRefused())
		return true, false
	default:
		d.set(CheckContainer, CheckOK, "%s: no immutability policy, no legal hold", d.containerName)
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
		"its properties were not readable: %s)", d.containerName, answerText(d.containerUnread))
}
