package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func TestParseStorage(t *testing.T) {
	tests := []struct {
		name, cs           string
		ok                 bool
		target, path, acct string
	}{
		{"azurite", "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + devKey + ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;",
			true, "http://127.0.0.1:10000", "/devstoreaccount1", "devstoreaccount1"},
		{"keys in any case, localhost", "accountname=a;ACCOUNTKEY=k;blobendpoint=http://localhost:9/a/",
			true, "http://localhost:9", "/a", "a"},
		{"no key", "AccountName=a;BlobEndpoint=http://127.0.0.1:1/a", false, "", "", ""},
		{"not loopback", "AccountName=a;AccountKey=k;BlobEndpoint=http://10.0.0.1:1/a", false, "", "", ""},
		{"https", "AccountName=a;AccountKey=k;BlobEndpoint=https://127.0.0.1:1/a", false, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseStorage(tt.cs)
			if !tt.ok {
				if err == nil {
					t.Fatalf("ParseStorage accepted %q", tt.cs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Target != tt.target || s.AccountPath != tt.path || s.Account != tt.acct || s.Key == "" || s.ConnString != tt.cs {
				t.Errorf("got %+v", *s)
			}
		})
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if Tail(path, 3) != nil || LogTail(path) != "" {
		t.Error("a missing file has a tail")
	}
	var b strings.Builder
	for i := range 20 {
		b.WriteString(strings.Repeat("x", i) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Tail(path, 3)
	if len(got) != 3 || got[2] != strings.Repeat("x", 19) {
		t.Errorf("Tail = %q", got)
	}
	if lt := LogTail(path); strings.Count(lt, "\n") != 16 || !strings.Contains(lt, path) {
		t.Errorf("LogTail = %q: want the path and 15 lines", lt)
	}
	if !LogHas(path, "xxxxx\n") || LogHas(path, "y") {
		t.Error("LogHas is wrong")
	}
}

func TestWaitUntil(t *testing.T) {
	n := 0
	if !WaitUntil(context.Background(), time.Now().Add(time.Minute), time.Millisecond, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("WaitUntil: cond called %d times, want 3 and true", n)
	}
	if WaitUntil(context.Background(), time.Now(), time.Millisecond, func() bool { return false }) {
		t.Error("WaitUntil held past its deadline")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if WaitUntil(ctx, time.Now().Add(time.Minute), time.Second, func() bool { return false }) {
		t.Error("WaitUntil held after its context ended")
	}
	if SleepCtx(ctx, time.Hour) || SleepCtx(ctx, 0) {
		t.Error("SleepCtx slept after its context ended")
	}
}
