package lease

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCauseRoundTrip(t *testing.T) {
	occ := time.Date(2026, 3, 10, 3, 0, 0, 0, time.UTC)
	for _, c := range []Cause{
		{Trigger: TriggerSchedule, Attempt: 1, Occurrence: occ, Missed: 0},
		{Trigger: TriggerRetry, Attempt: 3, Occurrence: occ, Missed: 12},
		{Trigger: TriggerManual, Attempt: 1, Occurrence: occ, Missed: -1, By: "alice@vm-1", Reason: "rerun after the fix, ticket 4711"},
		{Trigger: TriggerManual, Attempt: 1, Occurrence: occ, Missed: -1, By: "a,b%2C c", Reason: "commas, here, and %2C"},
		{Trigger: TriggerManual, Attempt: 1, Missed: -1},
	} {
		v := encodeCause(c)
		got, ok := decodeCause(v)
		if !ok || got != c {
			t.Errorf("%q decodes to %+v (%v), want %+v", v, got, ok, c)
		}
	}
	long := Cause{Trigger: TriggerManual, Attempt: 1, Missed: -1, By: strings.Repeat("b", 200), Reason: strings.Repeat("r", 300)}
	got, _ := decodeCause(encodeCause(long))
	if len(got.By) != causeByMax || len(got.Reason) != causeReasonMax || !strings.HasSuffix(got.By, cutMark) {
		t.Errorf("a long requester and reason are kept as %d and %d characters, want %d and %d, cut", len(got.By), len(got.Reason), causeByMax, causeReasonMax)
	}
	for _, bad := range []string{"", "manual", "later,1,1,,,", "retry,0,1,,,", "retry,x,1,,,", "retry,2,-5,,,", "retry,2,1,-1,,", "manual,1,1,,%zz,"} {
		if c, ok := decodeCause(bad); ok {
			t.Errorf("%q decodes to %+v, want malformed", bad, c)
		}
	}
	for _, c := range []struct {
		c    Cause
		want string
	}{
		{Cause{Trigger: TriggerSchedule, Attempt: 1, Occurrence: occ}, "schedule 2026-03-10T03:00Z"},
		{Cause{Trigger: TriggerRetry, Attempt: 2, Occurrence: occ}, "retry 2 of 2026-03-10T03:00Z"},
		{Cause{Trigger: TriggerManual, By: "alice@vm-1", Reason: "a fix"}, "manual by alice@vm-1: a fix"},
		{Cause{Trigger: TriggerManual, By: "alice@vm-1"}, "manual by alice@vm-1"},
	} {
		if got := c.c.String(); got != c.want {
			t.Errorf("%+v reads %q, want %q", c.c, got, c.want)
		}
	}
}

// A run's cause is read with it, and goes when the history drops the run.
func TestCausesFollowTheHistory(t *testing.T) {
	md := map[string]string{}
	start := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	for term := int64(1); term <= historyLen+5; term++ {
		s := start.Add(time.Duration(term) * time.Minute)
		md = startRun(md, Run{Holder: "vm", Term: term, Start: s})
		md[causeKey(term)] = encodeCause(Cause{Trigger: TriggerRetry, Attempt: int(term), Occurrence: start, Missed: -1})
		md = recordRunEnd(md, Run{Holder: "vm", Term: term, Start: s, End: s.Add(time.Second), ExitCode: exitOf(1)})
	}
	runs := ReadHistory(md, false)
	if len(runs) != historyLen {
		t.Fatalf("%d runs, want %d", len(runs), historyLen)
	}
	for _, r := range runs {
		if r.Cause == nil || r.Cause.Attempt != int(r.Term) {
			t.Errorf("run of term %d: cause %+v", r.Term, r.Cause)
		}
	}
	n := 0
	for k := range md {
		if _, ok := causeTerm(k); ok {
			n++
		}
	}
	if n != historyLen {
		t.Errorf("%d causes kept for %d runs", n, historyLen)
	}
	if _, ok := md[causeKey(5)]; ok {
		t.Error("the cause of a run the history dropped is still there")
	}
}

// The worst case of a scheduled lease whose every run was triggered by
// hand with the longest requester and reason: it fits Azure's 8 KB and
// keeps at least 10 runs (the figures the record_history.go doc comment
// states).
func TestHistoryMetadataSizeWithCauses(t *testing.T) {
	md := worstMetadata()
	last := time.Unix(9_999_999_999, 0).UTC()
	big := strconv.FormatInt(math.MaxInt64, 10)
	md[mdSchedule] = strings.Repeat("s", 64)
	md[mdOccurrence], md[mdAttempt], md[mdMode] = formatTime(last), "11", ModeOncePer
	md[mdTriggered] = big + "," + strings.Repeat("n", 36)
	md[mdLostAt] = big + "," + formatTime(last)
	worst := Cause{Trigger: TriggerManual, Attempt: 1, Occurrence: last, Missed: -1,
		By: strings.Repeat(",", maxTriggerByLen), Reason: strings.Repeat("r", maxPauseReasonLen)}
	for _, r := range ReadHistory(md, false) {
		md[causeKey(r.Term)] = encodeCause(worst)
	}
	const documented = 8054
	if got := metadataSize(md); got != documented {
		t.Errorf("worst case with causes: %d bytes, the doc comment says %d", got, documented)
	}
	md = fitMetadata(md)
	if got := metadataSize(md); got > maxMetadataSize {
		t.Errorf("fitted: %d bytes, over %d", got, maxMetadataSize)
	}
	if got := len(ReadHistory(md, false)); got < 10 {
		t.Errorf("fitted: %d runs kept, want at least 10", got)
	}
	t.Logf("fitted: %d bytes, %d runs", metadataSize(md), len(ReadHistory(md, false)))
}
