package lease

import (
	"maps"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

var histT0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func exitOf(c int) *int { return &c }

// ended is a run of holder h and term n that started n minutes after histT0 and
// took 30 s.
func ended(h string, n int64, exit int) Run {
	start := histT0.Add(time.Duration(n) * time.Minute)
	return Run{Holder: h, Term: n, Start: start, End: start.Add(30 * time.Second), ExitCode: exitOf(exit)}
}

func describe(runs []Run) string {
	var b strings.Builder
	for _, r := range runs {
		b.WriteString(r.Holder + "/" + strconv.FormatInt(r.Term, 10))
		switch {
		case r.Running:
			b.WriteString(":running")
		case r.EndUnknown():
			b.WriteString(":lost")
		case r.ExitCode != nil:
			b.WriteString(":" + strconv.Itoa(*r.ExitCode))
		}
		b.WriteString(" ")
	}
	return strings.TrimSpace(b.String())
}

func TestHistorySequences(t *testing.T) {
	tests := []struct {
		name string
		do   func(md map[string]string) map[string]string
		held bool
		want string
	}{
		{"empty", func(md map[string]string) map[string]string { return md }, false, ""},
		{"one run ended", func(md map[string]string) map[string]string {
			md = startRun(md, Run{Holder: "a", Term: 1, Start: histT0})
			return recordRunEnd(md, ended("a", 1, 0))
		}, false, "a/1:0"},
		{"running while held", func(md map[string]string) map[string]string {
			md = recordRunEnd(startRun(md, Run{Holder: "a", Term: 1, Start: histT0}), ended("a", 1, 3))
			return startRun(md, Run{Holder: "b", Term: 2, Start: histT0.Add(2 * time.Minute)})
		}, true, "b/2:running a/1:3"},
		{"no end and not held is lost", func(md map[string]string) map[string]string {
			return startRun(md, Run{Holder: "b", Term: 2, Start: histT0.Add(2 * time.Minute)})
		}, false, "b/2:lost"},
		{"next claim archives a run that lost its lease", func(md map[string]string) map[string]string {
			md = startRun(md, Run{Holder: "a", Term: 1, Start: histT0.Add(time.Minute)})
			md = startRun(md, Run{Holder: "b", Term: 2, Start: histT0.Add(2 * time.Minute)})
			return recordRunEnd(md, ended("b", 2, 0))
		}, false, "b/2:0 a/1:lost"},
		{"a run is archived once", func(md map[string]string) map[string]string {
			md = startRun(md, Run{Holder: "a", Term: 1, Start: histT0.Add(time.Minute)})
			md = recordRunEnd(md, ended("a", 1, 0))
			md = startRun(md, Run{Holder: "b", Term: 2, Start: histT0.Add(2 * time.Minute)})
			md = pushRun(md, ended("a", 1, 0))
			return recordRunEnd(md, ended("b", 2, 1))
		}, false, "b/2:1 a/1:0"},
		{"a known end replaces an unknown one", func(md map[string]string) map[string]string {
			lost := ended("a", 1, 0)
			lost.End, lost.ExitCode = time.Time{}, nil
			return pushRun(pushRun(md, lost), ended("a", 1, 0))
		}, false, "a/1:0"},
		{"an unknown end does not replace a known one", func(md map[string]string) map[string]string {
			lost := ended("a", 1, 0)
			lost.End, lost.ExitCode = time.Time{}, nil
			return pushRun(pushRun(md, ended("a", 1, 0)), lost)
		}, false, "a/1:0"},
		{"overflow drops the oldest", func(md map[string]string) map[string]string {
			for n := int64(1); n <= historyLen+5; n++ {
				md = recordRunEnd(startRun(md, Run{Holder: "h", Term: n, Start: histT0}), ended("h", n, int(n)))
			}
			return md
		}, false, func() string {
			var want []string
			for n := historyLen + 5; n > 5; n-- {
				want = append(want, "h/"+strconv.Itoa(n)+":"+strconv.Itoa(n))
			}
			return strings.Join(want, " ")
		}()},
		{"metadata from before the history", func(md map[string]string) map[string]string {
			return map[string]string{mdTerm: "7", mdLastRunHolder: "old", mdLastRunStart: formatTime(histT0),
				mdLastRunEnd: formatTime(histT0.Add(time.Second)), mdLastExit: "0"}
		}, false, "old/7:0"},
		{"malformed entries read as absent", func(md map[string]string) map[string]string {
			md = recordRunEnd(md, ended("good", 3, 0))
			md["history1"] = "x,1,2,3,h"
			md["history2"] = "1,-5,,,h"
			md["history3"] = "1,100,,256,h"
			md["history4"] = "1,100,soon,,h"
			md["history5"] = "1,100,,"
			md["history6"] = ""
			md["history7"] = "2,1795000000,,,kept"
			md[historyKey(historyLen)] = "9,1795000000,,,beyond the ring"
			return md
		}, false, "good/3:0 kept/2:lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := tt.do(map[string]string{})
			if got := describe(ReadHistory(md, tt.held)); got != tt.want {
				t.Errorf("history = %q, want %q\nmetadata: %v", got, tt.want, md)
			}
		})
	}
}

func TestHistoryRecordRunEnd(t *testing.T) {
	md := startRun(map[string]string{"Foreign": "kept"}, Run{Holder: "vm-3", Term: 42, Start: histT0})
	md = recordRunEnd(md, ended("vm-3", 42, 0))
	for n := int64(43); n < 43+historyLen; n++ {
		md = recordRunEnd(startRun(md, Run{Holder: "vm-2", Term: n, Start: histT0}), ended("vm-2", n, 1))
	}
	for k, want := range map[string]string{
		"foreign": "kept", mdLastRunHolder: "vm-2", mdLastRunTerm: strconv.Itoa(42 + historyLen), mdLastExit: "1",
		mdLastSuccessHolder: "vm-3", mdLastSuccessTerm: "42", mdLastSuccessEnd: formatTime(ended("", 42, 0).End),
	} {
		if md[k] != want {
			t.Errorf("%s = %q, want %q", k, md[k], want)
		}
	}
	for _, r := range ReadHistory(md, false) {
		if r.Term == 42 {
			t.Errorf("term 42 should have rolled out of the history: %s", describe(ReadHistory(md, false)))
		}
	}
	s := LastSuccess(md)
	if s == nil || s.Holder != "vm-3" || s.Term != 42 || !s.End.Equal(ended("", 42, 0).End) {
		t.Fatalf("LastSuccess = %+v, want vm-3, term 42, after the success rolled out of the history", s)
	}

	// An exit code outside 0–255 is recorded as unknown.
	md = recordRunEnd(md, Run{Holder: "x", Term: 99, Start: histT0, End: histT0.Add(time.Second), ExitCode: exitOf(-1)})
	if _, has := md[mdLastExit]; has {
		t.Errorf("lastexit = %q for exit code -1, want absent", md[mdLastExit])
	}
}

func TestHistoryLastSuccess(t *testing.T) {
	old := map[string]string{mdTerm: "7", mdLastRunHolder: "old", mdLastRunStart: formatTime(histT0),
		mdLastRunEnd: formatTime(histT0.Add(time.Second)), mdLastExit: "0"}
	if s := LastSuccess(old); s == nil || s.Holder != "old" || s.Term != 7 {
		t.Errorf("LastSuccess of metadata without lastsuccess keys = %+v, want old's run (term 7)", s)
	}
	failed := maps.Clone(old)
	failed[mdLastExit] = "2"
	if s := LastSuccess(failed); s != nil {
		t.Errorf("LastSuccess with only a failed run = %+v, want nil", s)
	}
	bad := maps.Clone(failed)
	bad[mdLastSuccessEnd] = "yesterday"
	if s := LastSuccess(bad); s != nil {
		t.Errorf("LastSuccess with a malformed lastsuccessend = %+v, want nil", s)
	}
}

func TestHistoryPureAndLowercase(t *testing.T) {
	in := map[string]string{"History0": "1,1795000000,,,a", mdLastRunStart: formatTime(histT0), mdLastRunHolder: "a"}
	before := maps.Clone(in)
	out := recordRunEnd(startRun(in, Run{Holder: "b", Term: 2, Start: histT0}), ended("b", 2, 0))
	_ = pushRun(in, ended("c", 3, 0))
	if !maps.Equal(in, before) {
		t.Errorf("input metadata changed: %v, was %v", in, before)
	}
	for k := range out {
		if k != strings.ToLower(k) {
			t.Errorf("key %q is not lowercase", k)
		}
	}
	if got := describe(ReadHistory(out, false)); got != "b/2:0 a/0:lost a/1:lost" {
		t.Errorf("history = %q", got)
	}
}

func TestHistoryHolderCut(t *testing.T) {
	long := strings.Repeat("h", maxIdentityLen)
	md := recordRunEnd(map[string]string{}, ended(long, 1, 0))
	v := md[historyKey(0)]
	holder := v[strings.LastIndex(v, ",")+1:]
	if len(holder) != historyHolderMax || !strings.HasSuffix(holder, cutMark) {
		t.Errorf("history holder = %q (%d characters), want %d ending in %q", holder, len(holder), historyHolderMax, cutMark)
	}
	if md[mdLastRunHolder] != long || md[mdLastSuccessHolder] != long {
		t.Errorf("lastrunholder and lastsuccessholder must keep the whole identity")
	}
	// The run is found again under its cut holder: no duplicate.
	md = startRun(md, Run{Holder: "b", Term: 2, Start: histT0.Add(time.Hour)})
	if got := len(ReadHistory(md, true)); got != 2 {
		t.Errorf("%d runs, want 2: %s", got, describe(ReadHistory(md, true)))
	}
}

// worstMetadata is every key leaderrun writes at its largest, with a full
// history.
func worstMetadata() map[string]string {
	holder := strings.Repeat("h", maxIdentityLen)
	last := time.Unix(9_999_999_999, 0).UTC() // the last second with 10 digits, in 2286
	md := map[string]string{
		mdHolder: holder, mdTerm: strconv.FormatInt(math.MaxInt64, 10), mdLeaseDuration: "60",
		mdAcquiredAt: formatTime(last), mdVersion: strings.Repeat("v", 64), "slots": "50",
	}
	zero := 0
	md = recordRunEnd(md, Run{Holder: holder, Term: math.MaxInt64 - 100, Start: last.Add(-time.Hour), End: last, ExitCode: &zero})
	for i := range historyLen + 1 {
		term := int64(math.MaxInt64 - i)
		r := Run{Holder: holder, Term: term, Start: last.Add(-time.Duration(i) * time.Second), End: last, ExitCode: exitOf(255)}
		md = recordRunEnd(startRun(md, Run{Holder: holder, Term: term, Start: r.Start}), r)
	}
	return md
}

func TestHistoryMetadataSize(t *testing.T) {
	md := worstMetadata()
	if got := len(ReadHistory(md, false)); got != historyLen {
		t.Fatalf("%d runs in the worst case, want %d", got, historyLen)
	}
	for _, k := range []string{mdLastSuccessEnd, mdLastSuccessHolder, mdLastSuccessTerm, mdLastExit, mdLastRunTerm} {
		if md[k] == "" {
			t.Fatalf("worst case lacks %s", k)
		}
	}
	// The figure the history.go doc comment states.
	const documented, reserve = 4140, 3 << 10
	if got := metadataSize(md); got != documented {
		t.Errorf("worst-case metadata is %d bytes, the doc comment says %d", got, documented)
	}
	if got := metadataSize(md); got > maxMetadataSize-reserve {
		t.Errorf("worst-case metadata is %d bytes: want at most %d, leaving %d for others' keys", got, maxMetadataSize-reserve, reserve)
	}
}

func TestHistoryCrowdedMetadata(t *testing.T) {
	md := worstMetadata()
	md["foreign"] = strings.Repeat("f", 5000)
	md = pushRun(md, ended("new", 1, 0))
	if got := metadataSize(md); got > maxMetadataSize {
		t.Errorf("metadata is %d bytes after a push, over Azure's %d", got, maxMetadataSize)
	}
	runs := ring(md)
	if len(runs) == 0 || len(runs) >= historyLen || runs[0].Holder != "new" {
		t.Errorf("want the ring cut to fit, newest kept: %s", describe(runs))
	}
}

func TestHistoryViewRuns(t *testing.T) {
	slot := func(i int, runs ...Run) Slot { // runs oldest first
		md := map[string]string{}
		for _, r := range runs {
			md = pushRun(md, r)
		}
		return Slot{Index: i, Props: &Properties{Exists: true, State: StateAvailable, Metadata: md}}
	}
	v := &View{Slots: []Slot{slot(0, ended("a", 1, 0), ended("a", 5, 0)), slot(1, ended("b", 2, 0), ended("b", 4, 1))}}
	if got, want := describe(v.Runs()), "a/5:0 b/4:1 b/2:0 a/1:0"; got != want {
		t.Errorf("Runs = %q, want %q", got, want)
	}
}
