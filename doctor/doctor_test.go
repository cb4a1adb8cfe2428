package doctor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/lease"
)

// devKey is the Azurite emulator's well-known account key (public,
// documented by Microsoft).
const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	tests := []struct {
		what string
		ds   []time.Duration
		p    int
		want time.Duration
	}{
		{"one", ms(5), 50, 5 * time.Millisecond},
		{"p50 of 10", ms(10, 1, 9, 2, 8, 3, 7, 4, 6, 5), 50, 5 * time.Millisecond},
		{"p95 of 10 is the largest", ms(10, 1, 9, 2, 8, 3, 7, 4, 6, 5), 95, 10 * time.Millisecond},
		{"p95 of 3", ms(3, 1, 2), 95, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := percentile(tt.ds, tt.p); got != tt.want {
			t.Errorf("%s: p%d = %s, want %s", tt.what, tt.p, got, tt.want)
		}
	}
}

// The credential is named with where it came from, never with a secret.
func TestCredential(t *testing.T) {
	const sig = "c2lnbmF0dXJlLW9mLWEtc2Fz"
	tests := []struct {
		name string
		cfg  lease.ClientConfig
		want string
	}{
		{"connection string", lease.ClientConfig{ConnectionString: "AccountName=acct;AccountKey=" + devKey},
			"shared key of account acct, from AZURE_STORAGE_CONNECTION_STRING"},
		{"key", lease.ClientConfig{Account: "acct", AccountKey: devKey},
			"shared key of account acct, from AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY"},
		{"SAS", lease.ClientConfig{Account: "acct", SASToken: "?sv=2022-11-02&sp=racw&se=2030-01-01T00%3A00%3A00Z&sr=c&sig=" + sig},
			"SAS token from AZURE_STORAGE_SAS_TOKEN (permissions racw, expires 2030-01-01T00:00:00Z)"},
		{"user delegation SAS in a connection string", lease.ClientConfig{ConnectionString: "BlobEndpoint=https://acct.blob.core.windows.net;SharedAccessSignature=sp=r&skoid=x&sig=" + sig},
			"SAS token from AZURE_STORAGE_CONNECTION_STRING (permissions r, user delegation)"},
		{"SAS that does not parse", lease.ClientConfig{Account: "acct", SASToken: "sp=r;sig=" + sig},
			"SAS token from AZURE_STORAGE_SAS_TOKEN"},
		{"Entra ID", lease.ClientConfig{Account: "acct"}, "Microsoft Entra ID through DefaultAzureCredential"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Container = "c-1"
			c, err := lease.NewContainer(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			d := &doctor{cred: c.Credential()}
			got := d.credential()
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			if strings.Contains(got, sig) || strings.Contains(got, devKey[:20]) {
				t.Errorf("a secret in %q", got)
			}
		})
	}
	d := &doctor{cred: lease.Credential{Kind: lease.CredentialEntraID}, entraWith: "ManagedIdentityCredential"}
	if got, want := d.credential(), "Microsoft Entra ID through DefaultAzureCredential: managed identity (ManagedIdentityCredential)"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// The round trip is judged against what a renewal has at the run's lease
// duration: each try is cut at the renew try's bound.
func TestRoundTrip(t *testing.T) {
	cfg, err := lease.Config{Duration: 15 * time.Second, KillGrace: 10 * time.Second, Identity: "x"}.Check()
	if err != nil {
		t.Fatal(err)
	}
	window, try := cfg.RenewTiming()
	if window != 3500*time.Millisecond || try.Round(10*time.Millisecond) != 1170*time.Millisecond {
		t.Fatalf("RenewTiming at 15s = %s, %s; want 3.5s and 1.17s", window, try)
	}
	for _, tt := range []struct {
		rtt  time.Duration
		want CheckStatus
	}{
		{2 * time.Millisecond, CheckOK},
		{400 * time.Millisecond, CheckWarning},
		{1200 * time.Millisecond, CheckFailed},
	} {
		d := &doctor{cfg: cfg, results: map[string]Check{}}
		d.roundTrip([]time.Duration{tt.rtt, tt.rtt})
		c := d.results[CheckRoundTrip]
		if c.Status != tt.want || !strings.Contains(c.Detail, "at --lease-duration 15s a renewal is sent every 5s, each try cut at 1.17s") {
			t.Errorf("%s: %s %q, want %s", tt.rtt, c.Status, c.Detail, tt.want)
		}
	}
}

func TestClock(t *testing.T) {
	for _, tt := range []struct {
		skews []time.Duration
		want  CheckStatus
		says  string
	}{
		{[]time.Duration{300 * time.Millisecond, -200 * time.Millisecond, 100 * time.Millisecond}, CheckOK, "within 1s"},
		{[]time.Duration{3 * time.Minute, 3*time.Minute + 400*time.Millisecond, 3 * time.Minute}, CheckWarning, "3m0s behind the service's"},
		{[]time.Duration{-20 * time.Second}, CheckWarning, "20s ahead of the service's"},
	} {
		d := &doctor{skews: tt.skews, results: map[string]Check{}}
		d.clock()
		if c := d.results[CheckClock]; c.Status != tt.want || !strings.Contains(c.Detail, tt.says) {
			t.Errorf("skews %v: %s %q, want %s saying %q", tt.skews, c.Status, c.Detail, tt.want, tt.says)
		}
	}
}

// Run refuses what a run would refuse before any request.
func TestConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Client: lease.ClientConfig{Account: "acct", AccountKey: devKey, Container: "c-1", Blob: "x"}, Duration: 5 * time.Second},
		{Client: lease.ClientConfig{Account: "acct", AccountKey: devKey, Container: "c-1", Blob: "x"}, KillGrace: -time.Second},
		{Client: lease.ClientConfig{Account: "acct", AccountKey: devKey, Container: "C", Blob: "x"}},
		{Client: lease.ClientConfig{Account: "acct", AccountKey: devKey, Container: "c-1", Blob: "a~b"}},
		{Client: lease.ClientConfig{AccountKey: devKey, Container: "c-1"}},
	} {
		_, err := Run(context.Background(), cfg)
		var ce *lease.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%+v: %v, want a ConfigError", cfg, err)
		}
	}
}
