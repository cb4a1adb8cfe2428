package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// base is an arbitrary instant; records are written relative to it.
var base = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func at(ms int) string { return fmt.Sprint(base.Add(time.Duration(ms) * time.Millisecond).UnixNano()) }

func writeRecords(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "records")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readProcs(t *testing.T, lines ...string) []Proc {
	t.Helper()
	r := NewRecords(writeRecords(t, lines...))
	if err := r.Poll(); err != nil {
		t.Fatal(err)
	}
	return r.Procs()
}

func TestRecordsPollIncremental(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records")
	r := NewRecords(path)
	if err := r.Poll(); err != nil {
		t.Fatalf("missing file: %v", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A record cut in the middle is kept until its end arrives.
	if _, err := f.WriteString("begin " + at(0) + " 10 child holder 1 id-1\nbeat " + at(20)); err != nil {
		t.Fatal(err)
	}
	if err := r.Poll(); err != nil {
		t.Fatal(err)
	}
	if p := r.Procs(); len(p) != 1 || p[0].Beats != 0 {
		t.Fatalf("after a partial line: %+v", p)
	}
	if _, err := f.WriteString(" 10 child holder 1 id-1\nend " + at(30) + " 10 child holder 1 id-1\n"); err != nil {
		t.Fatal(err)
	}
	if err := r.Poll(); err != nil {
		t.Fatal(err)
	}
	p := r.Procs()[0]
	if p.Beats != 1 || !p.Ended || !p.End.Equal(base.Add(30*time.Millisecond)) || p.Term != 1 || p.LeaseID != "id-1" ||
		p.MaxGap != 20*time.Millisecond {
		t.Fatalf("got %+v", p)
	}
}

func TestRecordsRejectMalformed(t *testing.T) {
	for name, line := range map[string]string{
		"fields":       "begin " + at(0) + " 10 child holder 1",
		"time":         "begin soon 10 child holder 1 -",
		"event":        "start " + at(0) + " 10 child holder 1 -",
		"beat first":   "beat " + at(0) + " 10 child holder 1 -",
		"term":         "begin " + at(0) + " 10 child holder x -",
		"after an end": "begin " + at(0) + " 10 child holder 1 -\nend " + at(5) + " 10 child holder 1 -\nbeat " + at(9) + " 10 child holder 1 -",
	} {
		t.Run(name, func(t *testing.T) {
			r := NewRecords(writeRecords(t, line))
			if err := r.Poll(); err == nil {
				t.Fatalf("no error for %q", line)
			}
		})
	}
}

func TestMaxOverlap(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  time.Duration
	}{
		{"handover", []string{
			"begin " + at(0) + " 1 child holder 1 a", "beat " + at(1000) + " 1 child holder 1 a",
			"begin " + at(1001) + " 2 child follower 2 b", "beat " + at(3000) + " 2 child follower 2 b",
		}, 0},
		{"killed grandchild overlaps", []string{
			"begin " + at(0) + " 1 child holder 1 a", "end " + at(1000) + " 1 child holder 1 a",
			"begin " + at(5) + " 3 grandchild holder 1 a", "beat " + at(1500) + " 3 grandchild holder 1 a",
			"begin " + at(1200) + " 2 child follower 2 b", "beat " + at(3000) + " 2 child follower 2 b",
		}, 300 * time.Millisecond},
		{"same owner never overlaps itself", []string{
			"begin " + at(0) + " 1 child holder 1 a", "beat " + at(1000) + " 1 child holder 1 a",
			"begin " + at(10) + " 3 grandchild holder 1 a", "beat " + at(1000) + " 3 grandchild holder 1 a",
		}, 0},
		{"contained", []string{
			"begin " + at(0) + " 1 child holder 1 a", "beat " + at(9000) + " 1 child holder 1 a",
			"begin " + at(2000) + " 2 child follower 2 b", "end " + at(2500) + " 2 child follower 2 b",
		}, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := MaxOverlap(readProcs(t, tt.lines...))
			if o.D != tt.want {
				t.Fatalf("overlap %s, want %s (%s)", o.D, tt.want, o)
			}
			if o.D > 0 && o.A.Begin.After(o.B.Begin) {
				t.Fatalf("A must be the one that began first: %s", o)
			}
		})
	}
}

func TestGroupOf(t *testing.T) {
	procs := readProcs(t,
		"begin "+at(0)+" 1 child holder 4 a", "end "+at(1000)+" 1 child holder 4 a",
		"begin "+at(10)+" 3 grandchild holder 4 a", "beat "+at(1400)+" 3 grandchild holder 4 a",
		"begin "+at(2000)+" 2 child follower 5 b",
	)
	g, ok := GroupOf(procs, "holder")
	if !ok || g.Procs != 2 || g.Term != 4 || g.Ended || !g.Begin.Equal(base) || !g.End.Equal(base.Add(1400*time.Millisecond)) {
		t.Fatalf("holder group %+v, %v", g, ok)
	}
	if _, ok := GroupOf(procs, "nobody"); ok {
		t.Fatal("a group for an owner without processes")
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for p, want := range map[int]time.Duration{50: 5, 95: 10, 10: 1, 100: 10, 1: 1} {
		if got := percentile(ds, p); !got.OK || got.D != want {
			t.Errorf("p%d = %v, want %v", p, got, want)
		}
	}
	if percentile(nil, 50).OK {
		t.Error("a percentile of nothing")
	}
}

func TestParseKinds(t *testing.T) {
	tests := []struct {
		in   string
		want []Kind
		err  bool
	}{
		{"all", Kinds(), false},
		{"", Kinds(), false},
		{"1-3", []Kind{BlackHole, Reset, FlakyShort}, false},
		{"freeze, 9,8", []Kind{Freeze, StorageLoss}, false},
		{"kill9,6", []Kind{Kill9}, false},
		{"storage-loss", []Kind{StorageLoss}, false},
		{"0", nil, true},
		{"9-10", []Kind{StorageLoss, Eviction}, false},
		{"eviction", []Kind{Eviction}, false},
		{"11-12", []Kind{Throttle, LostAnswer}, false},
		{"throttle,lost-answer", []Kind{Throttle, LostAnswer}, false},
		{"escape,13", []Kind{Escape}, false},
		{"deputy,14", []Kind{Deputy}, false},
		{"3-15", nil, true},
		{"7-2", nil, true},
		{"gremlins", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseKinds(tt.in)
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestRandomParams checks the ranges that the scenarios' verdicts rely on.
func TestRandomParams(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		for _, k := range Kinds() {
			p := k.Random(rng)
			switch k {
			case FlakyShort:
				end := p.Offset + p.Length
				if p.Offset < 500*time.Millisecond || end < 5300*time.Millisecond || end > 5800*time.Millisecond {
					t.Fatalf("%s: %s: must cover the renewal at +5s and end by +5.8s", k, p)
				}
				if p.Mode.Latency > 2500*time.Millisecond || (p.Mode.ErrorRate > 0 && p.Mode.Latency > 800*time.Millisecond) {
					t.Fatalf("%s: %s: too slow for a retry to succeed in time", k, p)
				}
			case BlackHole, Reset, FlakyLong:
				if p.Length < 10*time.Second {
					t.Fatalf("%s: %s: shorter than the 8.5 s a fault may take to reach the stop deadline", k, p)
				}
				if k == FlakyLong && p.Mode.ErrorRate < 1 && p.Mode.Latency <= 3*time.Second {
					t.Fatalf("%s: %s: renewals could succeed", k, p)
				}
			case Stubborn:
				if !p.IgnoreTerm || p.Grandchildren < 1 || p.Length < 15*time.Second {
					t.Fatalf("%s: %s", k, p)
				}
			case Freeze:
				if p.Length <= 15*time.Second {
					t.Fatalf("%s: %s: not longer than the lease", k, p)
				}
			case StorageLoss:
				if p.Delete != "container" && p.Delete != "blob" {
					t.Fatalf("%s: %s", k, p)
				}
			case Deputy:
				if !slices.Contains(deputyFaults, p.Deputy) || p.Around < -500*time.Millisecond || p.Around > 700*time.Millisecond ||
					(p.Deputy == "partition") != (p.Mode.BlackHole || p.Mode.Reset) || (p.Deputy != "kill9" && p.Length < time.Second) {
					t.Fatalf("%s: %s", k, p)
				}
			case Escape:
				if !slices.Contains(escapeWays, p.Escape) || !slices.Contains(escapeStops, p.Stop) || p.Grandchildren < 1 ||
					(p.Stop == "lost") != p.Mode.BlackHole || (p.Stop == "lost" && p.Length < 15*time.Second) {
					t.Fatalf("%s: %s", k, p)
				}
			}
		}
	}
}

func TestTable(t *testing.T) {
	mk := func(k Kind, overlap time.Duration, failover time.Duration, failed bool) *Result {
		r := &Result{Trial: Trial{Kind: k}, Overlap: Overlap{D: overlap}, Failover: span(failover),
			ChildAfterFault: span(8 * time.Second)}
		if failed {
			r.Failures = []string{"x"}
		}
		return r
	}
	sums := Summarize([]*Result{
		mk(BlackHole, 0, 12*time.Second, false),
		mk(BlackHole, 0, 14*time.Second, false),
		mk(StorageLoss, 3*time.Second, 13*time.Second, false),
		{Trial: Trial{Kind: BlackHole}, Err: fmt.Errorf("emulator down")},
		mk(Kill9, 0, 13*time.Second, true),
	})
	if len(sums) != 3 || sums[0].Kind != BlackHole || sums[1].Kind != Kill9 || sums[2].Kind != StorageLoss {
		t.Fatalf("summaries %+v", sums)
	}
	bh := sums[0]
	if bh.Trials != 2 || bh.Errors != 1 || bh.FailoverP50.D != 12*time.Second || bh.FailoverP95.D != 14*time.Second {
		t.Fatalf("blackhole %+v", bh)
	}
	table := Table(sums)
	for _, want := range []string{
		"| 1 | blackhole | 2 (+1 errors) | 0 | 0 | 8.00s |",
		"| 6 | kill9 | 1 | 1 | 0 |",
		"| 9 | storage-loss | 1 | 0 | 1 |",
		"overlap p50 3.00s, max 3.00s",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

// TestJudge checks the verdicts on made-up trials: an overlap fails the
// scenarios held to the safety rule and is only reported for the others.
func TestJudge(t *testing.T) {
	lost := Exit{Started: true, Ended: true, During: true, Code: exitLost}
	stopped := Exit{Started: true, Ended: true, During: true, Code: 0}
	handover := []string{
		"begin " + at(0) + " 1 child holder 1 a", "beat " + at(9000) + " 1 child holder 1 a",
		"begin " + at(12000) + " 2 child follower 2 b", "beat " + at(13000) + " 2 child follower 2 b",
	}
	overlapping := []string{
		"begin " + at(0) + " 1 child holder 1 a", "beat " + at(9000) + " 1 child holder 1 a",
		"begin " + at(8000) + " 2 child follower 2 b", "beat " + at(13000) + " 2 child follower 2 b",
	}
	tests := []struct {
		name     string
		kind     Kind
		lines    []string
		exit     Exit
		wantFail string // "" for a pass
	}{
		{"blackhole handover", BlackHole, handover, lost, ""},
		{"blackhole overlap", BlackHole, overlapping, lost, "overlap"},
		{"blackhole without exit 76", BlackHole, handover, Exit{Started: true, Ended: true, During: true, Code: 0}, "want 76"},
		{"no takeover", Reset, handover[:2], lost, "never began"},
		{"late kill", Stubborn, []string{
			"begin " + at(0) + " 1 child holder 1 a", "beat " + at(16000) + " 1 child holder 1 a",
			"begin " + at(17000) + " 2 child follower 2 b",
		}, lost, "after the last renewal"},
		{"freeze overlap fails", Freeze, overlapping, lost, "overlap"},
		{"freeze handover", Freeze, handover, lost, ""},
		{"storage-loss overlap fails", StorageLoss, overlapping, lost, "overlap"},
		{"storage-loss handover", StorageLoss, handover, lost, ""},
		{"throttle kept", Throttle, handover[:2], Exit{Started: true, Ended: true, Code: 0}, ""},
		{"throttle kept, follower ran", Throttle, handover, Exit{Started: true, Ended: true, Code: 0}, "kept its leadership"},
		{"throttle lost in time", Throttle, handover, lost, ""},
		{"lost-answer overlap fails", LostAnswer, overlapping, lost, "overlap"},
		{"lost-answer lost, no takeover", LostAnswer, handover[:2], lost, "never began"},
		{"flaky-short follower ran", FlakyShort, handover, Exit{Started: true, Ended: true, Code: 0}, "follower's child ran"},
		{"deputy takes over", Deputy, []string{
			"begin " + at(0) + " 1 child holder 1 a", "end " + at(9000) + " 1 child holder 1 a",
			"begin " + at(9200) + " 2 child deputy 2 b", "beat " + at(13000) + " 2 child deputy 2 b",
		}, stopped, ""},
		{"deputy, then the follower", Deputy, []string{
			"begin " + at(0) + " 1 child holder 1 a", "end " + at(9000) + " 1 child holder 1 a",
			"begin " + at(9200) + " 2 child deputy 2 b", "beat " + at(9300) + " 2 child deputy 2 b",
			"begin " + at(25000) + " 3 child follower 3 c", "beat " + at(26000) + " 3 child follower 3 c",
		}, stopped, ""},
		{"deputy and follower at once", Deputy, []string{
			"begin " + at(0) + " 1 child holder 1 a", "end " + at(9000) + " 1 child holder 1 a",
			"begin " + at(9200) + " 2 child deputy 2 b", "beat " + at(12000) + " 2 child deputy 2 b",
			"begin " + at(11000) + " 3 child follower 3 c", "beat " + at(13000) + " 3 child follower 3 c",
		}, stopped, "overlap"},
		{"deputy under the holder", Deputy, []string{
			"begin " + at(0) + " 1 child holder 1 a", "end " + at(9000) + " 1 child holder 1 a",
			"begin " + at(8800) + " 2 child deputy 2 b", "beat " + at(12000) + " 2 child deputy 2 b",
		}, stopped, "overlap"},
		{"deputy, no successor", Deputy, handover[:2], stopped, "ever began"},
		{"deputy, holder lost", Deputy, handover, lost, "want the command's end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Result{Trial: Trial{Kind: tt.kind}, Procs: readProcs(t, tt.lines...), HolderExit: tt.exit,
				FaultAt: base.Add(time.Second), LastRenewal: base.Add(time.Second), TeardownAt: base.Add(20 * time.Second)}
			tr := &trial{res: r}
			tr.judge()
			got := strings.Join(r.Failures, "; ")
			switch {
			case tt.wantFail == "" && got != "":
				t.Fatalf("failed: %s", got)
			case tt.wantFail != "" && !strings.Contains(got, tt.wantFail):
				t.Fatalf("failures %q, want one with %q", got, tt.wantFail)
			}
			if tt.kind == StorageLoss && tt.wantFail != "" && r.Overlap.D != time.Second {
				t.Fatalf("storage-loss: overlap %s, want it measured", r.Overlap.D)
			}
		})
	}
}

func TestMostAtOnce(t *testing.T) {
	procs := readProcs(t,
		"begin "+at(0)+" 10 child holder 1 a",
		"begin "+at(5)+" 11 grandchild holder 1 a",
		"begin "+at(10)+" 20 child filler1 1 b",
		"end "+at(100)+" 10 child holder 1 a",
		"end "+at(120)+" 11 grandchild holder 1 a",
		"begin "+at(120)+" 30 child follower 2 c",
		"end "+at(200)+" 30 child follower 2 c",
		"end "+at(300)+" 20 child filler1 1 b",
	)
	if got := mostAtOnce(procs); got != 2 {
		t.Errorf("mostAtOnce = %d, want 2 (the follower began as the holder's group ended)", got)
	}
	if got := MaxOverlap(withoutFillers(procs)); got.D != 0 {
		t.Errorf("overlap without the fillers: %s", got)
	}
	late := append(procs, readProcs(t, "begin "+at(110)+" 40 child follower2 3 d", "end "+at(130)+" 40 child follower2 3 d")...)
	if got := mostAtOnce(late); got != 3 {
		t.Errorf("mostAtOnce = %d, want 3", got)
	}
}
