package monitor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// gaugesOf parses the textfile back with Prometheus's own parser.
func gaugesOf(t *testing.T, path, lease string) map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("Prometheus cannot parse the textfile: %v", err)
	}
	out := map[string]float64{}
	for name, mf := range families {
		if mf.GetHelp() == "" || mf.GetType().String() != "GAUGE" {
			t.Errorf("%s: help %q, type %s; want a gauge with help", name, mf.GetHelp(), mf.GetType())
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == lease {
				out[name] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func TestTextfileCarriesTheLastSuccessOver(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "leaderrun_report.prom")
	at := func(s int) time.Time { return time.Unix(1_800_000_000+int64(s), 0) }
	zero, three := 0, 3

	if err := WriteTextfile(path, Run{Lease: "cron/report", Invocation: at(0), Start: at(0), Running: true}); err != nil {
		t.Fatal(err)
	}
	if g := gaugesOf(t, path, "cron/report"); g["leaderrun_running"] != 1 || g["leaderrun_last_run_start_timestamp_seconds"] != float64(at(0).Unix()) {
		t.Errorf("while running: %v", g)
	}
	if err := WriteTextfile(path, Run{Lease: "cron/report", End: at(10), ExitCode: &zero}); err != nil {
		t.Fatal(err)
	}
	g := gaugesOf(t, path, "cron/report")
	if g["leaderrun_running"] != 0 || g["leaderrun_last_success_timestamp_seconds"] != float64(at(10).Unix()) || g["leaderrun_last_run_exit_code"] != 0 {
		t.Errorf("after a success: %v", g)
	}
	// A failed run, then a skip: the last success stays where it was.
	if err := WriteTextfile(path, Run{Lease: "cron/report", Invocation: at(300), Start: at(300), Running: true}); err != nil {
		t.Fatal(err)
	}
	if err := WriteTextfile(path, Run{Lease: "cron/report", End: at(310), ExitCode: &three}); err != nil {
		t.Fatal(err)
	}
	if err := WriteTextfile(path, Run{Lease: "cron/report", Invocation: at(600)}); err != nil {
		t.Fatal(err)
	}
	g = gaugesOf(t, path, "cron/report")
	want := map[string]float64{
		"leaderrun_last_success_timestamp_seconds":    float64(at(10).Unix()),
		"leaderrun_last_run_exit_code":                3,
		"leaderrun_last_run_start_timestamp_seconds":  float64(at(300).Unix()),
		"leaderrun_last_run_end_timestamp_seconds":    float64(at(310).Unix()),
		"leaderrun_last_invocation_timestamp_seconds": float64(at(600).Unix()),
		"leaderrun_running":                           0,
	}
	for k, v := range want {
		if g[k] != v {
			t.Errorf("%s = %v, want %v", k, g[k], v)
		}
	}
	// Written atomically: no temporary file is left, and none ends in .prom.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files in the directory: %v, want the textfile alone", entries)
	}
}

// A host that never ran COMMAND has no run gauges at all, only the
// invocation: absent, not a misleading 0.
func TestTextfileSkipOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.prom")
	if err := WriteTextfile(path, Run{Lease: "x", Invocation: time.Unix(1_800_000_000, 0)}); err != nil {
		t.Fatal(err)
	}
	g := gaugesOf(t, path, "x")
	if _, ok := g["leaderrun_last_success_timestamp_seconds"]; ok || len(g) != 2 {
		t.Errorf("gauges %v, want the invocation and running alone", g)
	}
}
