package lease

// output.go: a run's kept output (the end of what COMMAND wrote), as a
// helper blob of its own, ~output/NAME~TERM (slot I > 0:
// ~output/NAME~slot-I~TERM), whose metadata is the run's record. Written
// after the run by the host that ran it, never on the claim's path, never
// with the lease ID: the blob is not the lease's, and a run whose lease was
// lost may still write it. Each slot keeps the outputs of as many runs as
// its history keeps; older ones are deleted when a new one is written.

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

const outputMarker = "output/"

// OutputContentType is the content type of an output blob: COMMAND's bytes
// as it wrote them, usually text, in no known character set.
const OutputContentType = "text/plain"

// MaxOutput is the most output a run keeps (--keep-output).
const MaxOutput = 16 << 20

// The output blob's metadata keys: the run's record.
const (
	mdOutHolder  = "holder"
	mdOutTerm    = "term"
	mdOutSlot    = "slot"
	mdOutStart   = "start"   // RFC 3339, service time; absent if unknown
	mdOutEnd     = "end"     // RFC 3339, service time
	mdOutExit    = "exit"    // the run's exit status, as its history records it
	mdOutWritten = "written" // how many bytes COMMAND wrote; the blob holds the end of them
)

// OutputPrefix is the prefix of the output blobs of lease name, every slot's.
func OutputPrefix(name string) string { return HelperPrefix + outputMarker + name + MarkerSep }

// OutputBlob is the blob that keeps the output of term's run on slot.
func OutputBlob(name string, slot int, term int64) string {
	t := strconv.FormatInt(term, 10)
	if slot == 0 {
		return OutputPrefix(name) + t
	}
	return OutputPrefix(name) + slotMarker + strconv.Itoa(slot) + MarkerSep + t
}

// parseOutputBlob reads the slot and term of an output blob of lease name;
// ok is false for a name leaderrun does not write.
func parseOutputBlob(name, blob string) (slot int, term int64, ok bool) {
	rest, found := strings.CutPrefix(blob, OutputPrefix(name))
	if !found {
		return 0, 0, false
	}
	if s, ok := strings.CutPrefix(rest, slotMarker); ok {
		digits, t, found := strings.Cut(s, MarkerSep)
		i, err := strconv.Atoi(digits)
		if !found || err != nil || i < 1 || i >= MaxSlots || strconv.Itoa(i) != digits {
			return 0, 0, false
		}
		slot, rest = i, t
	}
	term, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || term < 1 || strconv.FormatInt(term, 10) != rest {
		return 0, 0, false
	}
	return slot, term, true
}

// Output is a run's kept output: the run, and the end of what COMMAND wrote.
type Output struct {
	Blob     string // the blob that keeps it
	Holder   string
	Term     int64
	Slot     int
	Start    time.Time // zero if unknown
	End      time.Time
	ExitCode *int  // nil if not recorded
	Written  int64 // how many bytes COMMAND wrote; Bytes holds the end of them
	Bytes    []byte
}

// metadata is o's record, as the blob's metadata.
func (o Output) metadata() map[string]string {
	md := map[string]string{
		mdOutHolder:  o.Holder,
		mdOutTerm:    strconv.FormatInt(o.Term, 10),
		mdOutSlot:    strconv.Itoa(o.Slot),
		mdOutEnd:     formatTime(o.End),
		mdOutWritten: strconv.FormatInt(o.Written, 10),
	}
	if !o.Start.IsZero() {
		md[mdOutStart] = formatTime(o.Start)
	}
	if o.ExitCode != nil {
		md[mdOutExit] = strconv.Itoa(*o.ExitCode)
	}
	return md
}

// outputOf reads an output blob's record (metadata keys lowercase); its
// name says the slot and term when the metadata does not.
func outputOf(name, blob string, md map[string]string) Output {
	slot, term, _ := parseOutputBlob(name, blob)
	o := Output{Blob: blob, Holder: md[mdOutHolder], Term: term, Slot: slot,
		Start: parseTime(md[mdOutStart]), End: parseTime(md[mdOutEnd])}
	if t, err := strconv.ParseInt(md[mdOutTerm], 10, 64); err == nil && t > 0 {
		o.Term = t
	}
	if n, err := strconv.Atoi(md[mdOutExit]); err == nil {
		o.ExitCode = &n
	}
	if n, err := strconv.ParseInt(md[mdOutWritten], 10, 64); err == nil && n >= 0 {
		o.Written = n
	}
	return o
}

// KeepOutput writes the output of this term's run: kept, the end of what
// COMMAND wrote (written bytes in all), and the run's record (its start as
// the metadata recorded it, its end now by the service's clock, exitCode).
// It replaces an earlier write of the same run, so that a retry after a
// lost answer does no harm; transient failures are retried within ctx and
// requestTimeout. It needs no lease: call it once COMMAND's processes are
// gone, the lease held or lost.
func (l *Lease) KeepOutput(ctx context.Context, exitCode int, kept []byte, written int64) error {
	l.mu.Lock()
	start := parseTime(l.meta[mdLastRunStart])
	l.mu.Unlock()
	o := Output{Holder: l.Identity, Term: l.Term, Slot: l.Slot, Start: start, End: l.serviceNow(), ExitCode: &exitCode, Written: written}
	b, err := l.b.c.Blob(OutputBlob(l.Name, l.Slot, l.Term))
	if err != nil {
		return err
	}
	return retryTransient(ctx, l.dice, requestTimeout, func(rctx context.Context) error {
		ans, err := b.api.putContent(rctx, kept, OutputContentType, o.metadata())
		if err == nil {
			l.sawDate(ans.Date)
		}
		return renamed(err, "keep output")
	})
}

// PruneOutputs deletes this slot's output blobs but the newest historyLen,
// the runs its history keeps: newest by end (the service's clock), then by
// term, so that outputs left from before a lease blob was made anew, its
// terms begun again, go first. One listing, then one request per blob
// deleted; a blob already gone is no error. Best effort: the first failure
// ends it.
func (l *Lease) PruneOutputs(ctx context.Context) error {
	listed, _, err := l.b.c.List(ctx, OutputPrefix(l.Name))
	if err != nil {
		return err
	}
	var outs []Output
	for _, x := range listed {
		if slot, _, ok := parseOutputBlob(l.Name, x.Name); ok && slot == l.Slot {
			outs = append(outs, outputOf(l.Name, x.Name, x.Props.Metadata))
		}
	}
	if len(outs) <= historyLen {
		return nil
	}
	slices.SortStableFunc(outs, newestFirst)
	for _, o := range outs[historyLen:] {
		b, err := l.b.c.Blob(o.Blob)
		if err != nil {
			return err
		}
		if err := retryTransient(ctx, l.dice, requestTimeout, func(rctx context.Context) error {
			_, err := b.api.deleteBlob(rctx)
			if se := asStorageError(err); se != nil && (se.kind == kindBlobMissing || se.kind == kindContainerMissing) {
				return nil
			}
			return renamed(err, "delete an old output")
		}); err != nil {
			return err
		}
		l.log.Debug("deleted an old run's output", "blob", o.Blob)
	}
	return nil
}

// newestFirst orders outputs by end, then term, newest first, then by slot.
func newestFirst(a, b Output) int {
	return cmp.Or(b.End.Compare(a.End), cmp.Compare(b.Term, a.Term), cmp.Compare(a.Slot, b.Slot))
}

// Outputs lists the kept outputs of lease name, every slot's, without
// their bytes, newest first: by end, then term. One listing (a request per
// 5,000 blobs).
func (b *Blob) Outputs(ctx context.Context) ([]Output, error) {
	listed, _, err := b.c.List(ctx, OutputPrefix(b.name))
	if err != nil {
		return nil, err
	}
	var out []Output
	for _, x := range listed {
		if _, _, ok := parseOutputBlob(b.name, x.Name); ok {
			out = append(out, outputOf(b.name, x.Name, x.Props.Metadata))
		}
	}
	slices.SortStableFunc(out, newestFirst)
	return out, nil
}

// ErrNoOutput is ReadOutput's error for a blob that does not exist.
var ErrNoOutput = errors.New("lease: no output kept")

// ReadOutput reads a kept output whole, o.Blob's record and bytes (one
// request). A blob that is gone is ErrNoOutput.
func (b *Blob) ReadOutput(ctx context.Context, blob string) (Output, error) {
	ob, err := b.c.Blob(blob)
	if err != nil {
		return Output{}, err
	}
	c, err := request(ctx, func(ctx context.Context) (blobContent, error) { return ob.api.getContent(ctx, MaxOutput) })
	if se := asStorageError(err); se != nil && (se.kind == kindBlobMissing || se.kind == kindContainerMissing) {
		return Output{}, ErrNoOutput
	}
	if err != nil {
		return Output{}, err
	}
	o := outputOf(b.name, blob, c.Metadata)
	o.Bytes = c.Body
	return o, nil
}
