package monitor

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// Run is what one invocation tells the textfile. Zero times are left as the
// previous file had them.
type Run struct {
	Lease      string
	Invocation time.Time // every invocation: this one's time
	Start, End time.Time // COMMAND's start, and its end
	ExitCode   *int      // with End: the status leaderrun exits with
	Running    bool      // this host runs COMMAND now
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
// rename. Values r does not set (a skip sets only the invocation) are
// carried over from the file's previous contents, so a failed run leaves
// the last success where it was.
func WriteTextfile(path string, r Run) error {
	values := previous(path, r.Lease)
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
	values["leaderrun_running"] = 0
	if r.Running {
		values["leaderrun_running"] = 1
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
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
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

// previous reads the gauges of lease from the file's current contents, with
// Prometheus's own parser; an absent or unreadable file is no values.
func previous(path, lease string) map[string]float64 {
	values := map[string]float64{}
	f, err := os.Open(path)
	if err != nil {
		return values
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		return values
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
	return values
}
