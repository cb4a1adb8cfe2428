package leader

import (
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/lease"
)

func TestHeldText(t *testing.T) {
	since := time.Date(2026, 11, 23, 8, 28, 1, 0, time.UTC)
	exit0 := 0
	ended := &lease.Run{Holder: "vm-1", Start: since, End: since.Add(time.Second), ExitCode: &exit0}
	running := &lease.Run{Holder: "vm-1", Start: since}
	tests := []struct {
		name string
		p    *lease.Properties
		self string
		want string
	}{
		{"current holder", &lease.Properties{Holder: "vm-1", Term: 4, AcquiredAt: since, LastRun: running}, "vm-2",
			"vm-1 since 2026-11-23T08:28:01Z"},
		{"the recorded run ended: a new holder is claiming", &lease.Properties{Holder: "vm-1", Term: 4, AcquiredAt: since, LastRun: ended}, "vm-2",
			"a holder not known yet (the metadata still names vm-1, whose run has ended)"},
		{"the metadata names this identity", &lease.Properties{Holder: "vm-2", Term: 4, AcquiredAt: since}, "vm-2",
			"a holder not known yet (the metadata names this identity, vm-2, from an earlier term)"},
		{"no metadata yet", &lease.Properties{}, "vm-2", "another holder"},
		{"an end recorded by another run's holder is not this term's", &lease.Properties{Holder: "vm-3", AcquiredAt: since, LastRun: ended}, "vm-2",
			"vm-3 since 2026-11-23T08:28:01Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held := &lease.HeldError{Holder: tt.p.Holder, Since: tt.p.AcquiredAt, Term: tt.p.Term, Stale: lease.StaleHolder(tt.p)}
			if got := heldText(held, tt.self); got != tt.want {
				t.Fatalf("heldText = %q, want %q", got, tt.want)
			}
		})
	}
}
