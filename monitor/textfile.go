package monitor

// WriteTextfile: the node_exporter textfile of a lease's gauges, read
// without following links or blocking, locked against another leaderrun
// of this host, and replaced atomically.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
)

// TextfileLockWait bounds the wait for another leaderrun that is writing
// the same textfile; past it, the file is written without the lock.
const TextfileLockWait = time.Second

// textfileMaxSize bounds what is read of the previous file: six gauges of
// one lease take about 1.5 kB.
const textfileMaxSize = 64 << 10

// lockPoll is how often a locked textfile is tried again.
const lockPoll = 10 * time.Millisecond

// Run is what one invocation tells the textfile. Zero values are left as
// the previous file had them: an invocation that only records itself (a
// skip, a lease held by another host) leaves leaderrun_running as it was,
// since this host's own run may still be going.
type Run struct {
	Lease      string
	Invocation time.Time // every invocation: this one's time
	Start      time.Time // COMMAND started: leaderrun_running is 1
	End        time.Time // COMMAND ended: leaderrun_running is 0
	ExitCode   *int      // with End: the status leaderrun exits with
}

// The gauges, by name, with their help.
var gauges = []struct{ name, help string }{
	{"leaderrun_last_run_start_timestamp_seconds", "When this host last started COMMAND under the lease."},
	{"leaderrun_last_run_end_timestamp_seconds", "When COMMAND last ended on this host."},
	{"leaderrun_last_run_exit_code", "The status leaderrun exited with after this host's last run (0: success)."},
	{"leaderrun_last_success_timestamp_seconds", "When a run of this host last ended with status 0."},
	{"leaderrun_running", "1 while this host runs COMMAND under the lease, else 0."},
	{"leaderrun_last_invocation_timestamp_seconds", "When leaderrun was last invoked for the lease on this host, whether it ran, skipped or found the lease held."},
}

// WriteTextfile writes r's gauges to path, in node_exporter's textfile
// format, atomically: a temporary file in the same directory (its name does
// not end in .prom, so the collector never reads it half-written), then a
// rename, which replaces whatever is at path (a link included) and never
// follows it. Values r does not set are carried over from the file's
// previous contents, so a failed run leaves the last success where it was.
//
// The read, the write and the rename hold an flock on a sibling lock file
// (.NAME.lock, kept), so that two leaderruns of this host cannot lose each
// other's values; the wait for it is at most TextfileLockWait. The previous
// file is read only if it is a regular file of at most 64 KiB, opened
// without following a link and without blocking (a FIFO or a device at the
// path cannot hold leaderrun up). A previous file that is none of these, or
// a lock not had in time, costs one WARNING on log, and the file is written
// all the same, from scratch or without the lock. An error means nothing
// was written.
func WriteTextfile(path string, r Run, log hclog.Logger) error {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	unlock, err := lockTextfile(path)
	if err != nil {
		log.Warn("writing the metrics file without its lock", "error", err)
	} else {
		defer unlock()
	}
	values, err := previous(path, r.Lease)
	if errors.Is(err, syscall.EISDIR) {
		return fmt.Errorf("metrics file: %s is a directory", path)
	}
	if err != nil {
		log.Warn("the metrics file's previous contents are not used; writing it from scratch", "error", err)
		values = map[string]float64{}
	}
	set := func(name string, t time.Time) {
		if !t.IsZero() {
			values[name] = float64(t.UnixMilli()) / 1000
		}
	}
	set("leaderrun_last_invocation_timestamp_seconds", r.Invocation)
	set("leaderrun_last_run_start_timestamp_seconds", r.Start)
	set("leaderrun_last_run_end_timestamp_seconds", r.End)
	if r.ExitCode != nil {
		values["leaderrun_last_run_exit_code"] = float64(*r.ExitCode)
		if *r.ExitCode == 0 {
			set("leaderrun_last_success_timestamp_seconds", r.End)
		}
	}
	switch {
	case !r.End.IsZero() || r.ExitCode != nil:
		values["leaderrun_running"] = 0
	case !r.Start.IsZero():
		values["leaderrun_running"] = 1
	default:
		if _, ok := values["leaderrun_running"]; !ok {
			values["leaderrun_running"] = 0 // no run recorded on this host
		}
	}

	var buf bytes.Buffer
	for _, g := range gauges {
		v, ok := values[g.name]
		if !ok {
			continue // never known on this host: absent, not 0
		}
		mf := &dto.MetricFamily{
			Name: proto.String(g.name), Help: proto.String(g.help), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{
				Label: []*dto.LabelPair{{Name: proto.String("lease"), Value: proto.String(r.Lease)}},
				Gauge: &dto.Gauge{Value: proto.Float64(v)},
			}},
		}
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			return fmt.Errorf("metrics file: %w", err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp") // O_EXCL
	if err != nil {
		return fmt.Errorf("metrics file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	_, err = tmp.Write(buf.Bytes())
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("metrics file: %w", err)
	}
	return nil
}

// lockTextfile takes an exclusive flock on path's sibling lock file,
// waiting at most TextfileLockWait, and returns its release. The lock file
// is opened as the textfile is read: no link followed, no blocking, a
// regular file only. It is never removed: a removed lock file lets a second
// writer lock a new one while the first still holds the old.
func lockTextfile(path string) (unlock func(), err error) {
	name := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	deadline := time.Now().Add(TextfileLockWait)
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the last descriptor releases the lock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, &os.PathError{Op: "flock", Path: name, Err: err}
		}
		if !time.Now().Before(deadline) {
			f.Close()
			return nil, fmt.Errorf("another process has held %s for %s", name, TextfileLockWait)
		}
		time.Sleep(lockPoll)
	}
}

// previous reads the gauges of lease from the file's current contents, with
// Prometheus's own parser. An absent file is no values and no error; a path
// that is not a regular file (a link, a FIFO, a device, a directory: the
// error wraps EISDIR), a file over textfileMaxSize, or one that does not
// parse, is an error.
func previous(path, lease string) (map[string]float64, error) {
	values := map[string]float64{}
	// Looked at first, so that a device is never opened (opening some has
	// effects); the open below does not follow a link and does not block,
	// and fstat checks again what was opened.
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return values, nil
	}
	if err != nil {
		return nil, err
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return values, nil // renamed away since
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err} // ELOOP: a link put there since
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(f, textfileMaxSize))
	if err != nil {
		return nil, fmt.Errorf("%s does not parse: %w", path, err)
	}
	for _, g := range gauges {
		for _, m := range families[g.name].GetMetric() { // none for an absent family
			for _, l := range m.GetLabel() {
				if l.GetName() == "lease" && l.GetValue() == lease && m.GetGauge() != nil {
					values[g.name] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return values, nil
}

// regular is nil for a regular file within textfileMaxSize.
func regular(path string, fi os.FileInfo) error {
	switch m := fi.Mode(); {
	case m.IsDir():
		return &os.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	case m&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link, not followed", path)
	case !m.IsRegular():
		return fmt.Errorf("%s is not a regular file (%s)", path, m.Type())
	case fi.Size() > textfileMaxSize:
		return fmt.Errorf("%s is larger than %d bytes", path, textfileMaxSize)
	}
	return nil
}
