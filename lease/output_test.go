package lease

import "testing"

// Output blobs are named under the helper prefix, per slot and term, and
// read back; names leaderrun does not write are not taken for them.
func TestOutputBlobNames(t *testing.T) {
	for _, tc := range []struct {
		slot int
		term int64
		blob string
	}{
		{0, 1, "~output/cron/report~1"},
		{0, 42, "~output/cron/report~42"},
		{3, 7, "~output/cron/report~slot-3~7"},
	} {
		if got := OutputBlob("cron/report", tc.slot, tc.term); got != tc.blob {
			t.Errorf("OutputBlob(slot %d, term %d) = %q, want %q", tc.slot, tc.term, got, tc.blob)
		}
		if slot, term, ok := parseOutputBlob("cron/report", tc.blob); !ok || slot != tc.slot || term != tc.term {
			t.Errorf("parse %q = %d, %d, %v", tc.blob, slot, term, ok)
		}
	}
	for _, bad := range []string{
		"~output/cron/report~", "~output/cron/report~0", "~output/cron/report~07", "~output/cron/report~x",
		"~output/cron/report~slot-0~1", "~output/cron/report~slot-3", "~output/cron/report~slot-03~1",
		"~output/cron/reportx~1", "~output/cron~1", "cron/report~1", "~done/cron/report~1",
	} {
		if _, _, ok := parseOutputBlob("cron/report", bad); ok {
			t.Errorf("%q taken for an output blob", bad)
		}
	}
}
