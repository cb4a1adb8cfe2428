package chaos

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Proc is one process's life as the chaos child recorded it (see the child
// command's documentation for the record format).
type Proc struct {
	PID     int
	Role    string // "child" or "grandchild"
	Owner   string // LEADERRUN_IDENTITY of the leaderrun that ran it
	Term    int64  // LEADERRUN_TERM; 0 if unknown
	LeaseID string // LEADERRUN_LEASE_ID; "" if unknown
	Begin   time.Time
	// End is the time of the end record if there is one (Ended), else of
	// the last heartbeat: a process killed by SIGKILL writes no end, and
	// died within one heartbeat period (20 ms by default, at most 50 ms)
	// plus scheduling delay after its last record.
	End   time.Time
	Ended bool
	Beats int
	// MaxGap is the longest time between two consecutive records: the
	// resolution of End for a killed process, under the machine's load.
	MaxGap time.Duration
}

// Records reads a records file as it grows. It keeps the processes seen so
// far; Poll reads what was appended since the last call. It is not safe for
// concurrent use.
type Records struct {
	path    string
	off     int64
	partial []byte
	procs   map[procKey]*Proc
	order   []procKey
	err     error
}

type procKey struct {
	pid   int
	owner string
}

// NewRecords returns a reader of the records file at path, which need not
// exist yet.
func NewRecords(path string) *Records {
	return &Records{path: path, procs: map[procKey]*Proc{}}
}

// Poll reads the complete lines appended since the last call. A missing file
// is not an error (no child has started yet); a malformed record is, and
// stays the reader's error.
func (r *Records) Poll() error {
	if r.err != nil {
		return r.err
	}
	f, err := os.Open(r.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(r.off, io.SeekStart); err != nil {
		return err
	}
	buf, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	r.off += int64(len(buf))
	data := append(r.partial, buf...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if err := r.add(string(data[:i])); err != nil {
			r.err = err
			return err
		}
		data = data[i+1:]
	}
	r.partial = append([]byte(nil), data...)
	return nil
}

// add applies one record: EVENT UNIXNANO PID ROLE IDENTITY TERM LEASEID.
func (r *Records) add(line string) error {
	f := strings.Fields(line)
	if len(f) != 7 {
		return fmt.Errorf("chaos: bad record %q: want 7 fields", line)
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return fmt.Errorf("chaos: bad record %q: %w", line, err)
	}
	pid, err := strconv.Atoi(f[2])
	if err != nil {
		return fmt.Errorf("chaos: bad record %q: %w", line, err)
	}
	at := time.Unix(0, ns)
	key := procKey{pid: pid, owner: f[4]}
	p := r.procs[key]
	switch f[0] {
	case "begin":
		if p != nil {
			return fmt.Errorf("chaos: second begin record for pid %d of %s", pid, f[4])
		}
		p = &Proc{PID: pid, Role: f[3], Owner: f[4], Begin: at, End: at}
		if f[5] != "-" {
			if p.Term, err = strconv.ParseInt(f[5], 10, 64); err != nil {
				return fmt.Errorf("chaos: bad record %q: term: %w", line, err)
			}
		}
		if f[6] != "-" {
			p.LeaseID = f[6]
		}
		r.procs[key] = p
		r.order = append(r.order, key)
		return nil
	case "beat", "end":
		if p == nil {
			return fmt.Errorf("chaos: %s record before begin for pid %d of %s", f[0], pid, f[4])
		}
		if p.Ended {
			return fmt.Errorf("chaos: record after end for pid %d of %s", pid, f[4])
		}
		p.MaxGap = max(p.MaxGap, at.Sub(p.End))
		p.End = at
		if f[0] == "end" {
			p.Ended = true
		} else {
			p.Beats++
		}
		return nil
	}
	return fmt.Errorf("chaos: bad record %q: unknown event", line)
}

// Procs returns the processes seen so far, in the order they began (by
// record order), as copies.
func (r *Records) Procs() []Proc {
	out := make([]Proc, 0, len(r.order))
	for _, k := range r.order {
		out = append(out, *r.procs[k])
	}
	return out
}

// Group is the life of one holder's processes: from the first begin to the
// last end (or last heartbeat) among the processes it ran.
type Group struct {
	Owner      string
	Term       int64 // the child's term (the same for every process of one holder)
	Begin, End time.Time
	Procs      int
	Ended      bool // every process wrote an end record (none was killed)
}

// GroupOf returns the group of owner's processes; ok is false if it ran none.
func GroupOf(procs []Proc, owner string) (g Group, ok bool) {
	g = Group{Owner: owner, Ended: true}
	for _, p := range procs {
		if p.Owner != owner {
			continue
		}
		if !ok || p.Begin.Before(g.Begin) {
			g.Begin = p.Begin
		}
		if !ok || p.End.After(g.End) {
			g.End = p.End
		}
		if p.Role == "child" || g.Term == 0 {
			g.Term = p.Term
		}
		g.Ended = g.Ended && p.Ended
		g.Procs++
		ok = true
	}
	return g, ok
}

// Overlap is the longest time during which two processes of different
// owners both ran, with the pair; zero (and zero Procs) when no two did.
type Overlap struct {
	D    time.Duration
	A, B Proc // A began first
}

// MaxOverlap compares every pair of processes of different owners: each ran
// from Begin to End, End being its last record (see Proc.End).
func MaxOverlap(procs []Proc) Overlap {
	var best Overlap
	for i, a := range procs {
		for _, b := range procs[i+1:] {
			if a.Owner == b.Owner {
				continue
			}
			start := a.Begin
			if b.Begin.After(start) {
				start = b.Begin
			}
			end := a.End
			if b.End.Before(end) {
				end = b.End
			}
			if d := end.Sub(start); d > best.D {
				first, second := a, b
				if b.Begin.Before(a.Begin) {
					first, second = b, a
				}
				best = Overlap{D: d, A: first, B: second}
			}
		}
	}
	return best
}

func (o Overlap) String() string {
	if o.D <= 0 {
		return "no overlap"
	}
	return fmt.Sprintf("%s's %s (pid %d, term %d) began while %s's %s (pid %d, term %d) still ran: together for %s",
		o.B.Owner, o.B.Role, o.B.PID, o.B.Term, o.A.Owner, o.A.Role, o.A.PID, o.A.Term, fmtDur(o.D))
}

// maxGap is the longest gap between two records of any one process.
func maxGap(procs []Proc) time.Duration {
	var g time.Duration
	for _, p := range procs {
		g = max(g, p.MaxGap)
	}
	return g
}
