package lease

import (
	"strings"
	"testing"
)

func TestBlobNames(t *testing.T) {
	tests := []struct {
		blob string
		want BlobName
	}{
		{"cron/report", BlobName{Lease: "cron/report", Kind: KindSlot}},
		{SlotBlob("cron/report", 0), BlobName{Lease: "cron/report", Kind: KindSlot}},
		{SlotBlob("cron/report", 3), BlobName{Lease: "cron/report", Kind: KindSlot, Slot: 3}},
		{SlotBlob("x", MaxSlots-1), BlobName{Lease: "x", Kind: KindSlot, Slot: MaxSlots - 1}},
		{PauseBlob("deploy"), BlobName{Lease: "deploy", Kind: KindPause}},
		{DeputyBlob("cron/report"), BlobName{Lease: "cron/report", Kind: KindDeputy}},
		{"x~deputy2", BlobName{Lease: "x", Kind: KindOther}},
		{DoneBlob("patch/2026-11", "vm-3"), BlobName{Lease: "patch/2026-11", Kind: KindDone, Host: "vm-3"}},
		{DoneBlob("p", "a/b"), BlobName{Lease: "p", Kind: KindDone, Host: "a/b"}},
		{"x~slot-0", BlobName{Lease: "x", Kind: KindOther}},
		{"x~slot-01", BlobName{Lease: "x", Kind: KindOther}},
		{"x~slot-50", BlobName{Lease: "x", Kind: KindOther}},
		{"x~slot-", BlobName{Lease: "x", Kind: KindOther}},
		{"x~done/", BlobName{Lease: "x", Kind: KindOther}},
		{"x~other", BlobName{Lease: "x", Kind: KindOther}},
		{"~done/patch~vm-3", BlobName{Lease: "patch", Kind: KindDone, Host: "vm-3"}},
		{"~done/patch~", BlobName{Kind: KindOther}},
		{"~done/~vm-3", BlobName{Kind: KindOther}},
		{"~other", BlobName{Kind: KindOther}},
		{legacyDoneBlob("patch", "vm-3"), BlobName{Lease: "patch", Kind: KindDone, Host: "vm-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.blob, func(t *testing.T) {
			if got := ParseBlobName(tt.blob); got != tt.want {
				t.Errorf("ParseBlobName(%q) = %+v, want %+v", tt.blob, got, tt.want)
			}
		})
	}
	if got := DoneBlob("cron/report", "vm-1"); got != "~done/cron/report~vm-1" {
		t.Errorf("done marker %q, want it under the helper prefix", got)
	}
	if got := SlotBlob("n", 0); got != "n" {
		t.Errorf("slot 0 of n is %q, want the lease blob itself", got)
	}
}

// A refused name, container or account is cut in the error: its ends and
// its length, never a page of it.
func TestRefusedNamesAreCut(t *testing.T) {
	long := "a//" + strings.Repeat("b", 2000)
	for _, err := range []error{validateBlobName(long), validateContainer(strings.Repeat("C", 500)), validateAccount(strings.Repeat("X", 300))} {
		if err == nil {
			t.Fatal("accepted")
		}
		if msg := err.Error(); len(msg) > 300 || !strings.Contains(msg, " characters)") {
			t.Errorf("error of %d characters, want it cut: %.120s…", len(msg), msg)
		}
	}
}
