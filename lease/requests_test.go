package lease

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

// What a *StorageError is, as callers outside lease ask it: each predicate
// true for the answers it names and for no other.
func TestStorageErrorPredicates(t *testing.T) {
	const versionBody = `<Error><Code>InvalidHeaderValue</Code><HeaderName>x-ms-version</HeaderName></Error>`
	type says struct{ blobMissing, containerMissing, exists, credential, permission, version bool }
	tests := []struct {
		name string
		err  error
		want says
	}{
		{"blob missing", respErr(404, "BlobNotFound"), says{blobMissing: true}},
		{"a read's 404", respErr(404, ""), says{blobMissing: true}},
		{"container missing", respErr(404, "ContainerNotFound"), says{containerMissing: true}},
		{"blob exists", respErr(409, "BlobAlreadyExists"), says{exists: true}},
		{"container exists", respErr(409, "ContainerAlreadyExists"), says{exists: true}},
		{"a bad key", respErr(403, "AuthenticationFailed"), says{credential: true}},
		{"shared key disabled", respErr(403, "KeyBasedAuthenticationNotPermitted"), says{credential: true}},
		{"401", respErr(401, "InvalidAuthenticationInfo"), says{credential: true}},
		{"no Entra ID token", nonRetriableErr{}, says{credential: true}},
		{"a role missing", respErr(403, "AuthorizationPermissionMismatch"), says{permission: true}},
		{"a SAS resource type", respErr(403, "AuthorizationResourceTypeMismatch"), says{permission: true}},
		{"API version", refusal("HEAD", 400, "InvalidHeaderValue", versionBody), says{version: true}},
		{"another header", refusal("PUT", 400, "InvalidHeaderValue", "<Error><HeaderName>x-ms-lease-id</HeaderName></Error>"), says{}},
		{"a lease held", respErr(409, "LeaseAlreadyPresent"), says{}},
		{"throttled", respErr(503, "ServerBusy"), says{}},
		{"no answer", context.DeadlineExceeded, says{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Container{name: "c", src: credentialSource{auth: authSharedKey}}
			se := c.mapError("op", tt.err)
			got := says{se.BlobMissing(), se.ContainerMissing(), se.AlreadyExists(), se.CredentialRefused(), se.LacksPermission(), se.VersionRefused()}
			if got != tt.want {
				t.Errorf("%+v, want %+v", got, tt.want)
			}
		})
	}
	if s := (&StorageError{StatusCode: 403, Code: "AuthorizationPermissionMismatch"}).Status(); s != "403 AuthorizationPermissionMismatch" {
		t.Errorf("Status with a code: %q", s)
	}
	if s := (&StorageError{StatusCode: 404}).Status(); s != "404 Not Found" {
		t.Errorf("Status without a code: %q", s)
	}
}

// A client's credential is shown with where it came from, never its secret.
func TestContainerCredential(t *testing.T) {
	const sig = "c2lnbmF0dXJlLW9mLWEtc2Fz"
	tests := []struct {
		name string
		cfg  ClientConfig
		want Credential
	}{
		{"connection string", ClientConfig{ConnectionString: "AccountName=acct;AccountKey=" + devKey},
			Credential{Kind: CredentialSharedKey, Account: "acct", FromConnectionString: true}},
		{"key", ClientConfig{Account: "acct", AccountKey: devKey}, Credential{Kind: CredentialSharedKey, Account: "acct"}},
		{"SAS", ClientConfig{Account: "acct", SASToken: "?sv=2022-11-02&sp=racw&sig=" + sig},
			Credential{Kind: CredentialSAS, Account: "acct", SAS: url.Values{"sv": {"2022-11-02"}, "sp": {"racw"}}}},
		{"SAS in a connection string", ClientConfig{ConnectionString: "BlobEndpoint=https://acct.blob.core.windows.net;SharedAccessSignature=sp=r&skoid=x&sig=" + sig},
			Credential{Kind: CredentialSAS, FromConnectionString: true, SAS: url.Values{"sp": {"r"}, "skoid": {"x"}}}},
		{"a SAS that is no query", ClientConfig{Account: "acct", SASToken: "sp=r;sig=" + sig}, Credential{Kind: CredentialSAS, Account: "acct"}},
		{"Entra ID", ClientConfig{Account: "acct"}, Credential{Kind: CredentialEntraID, Account: "acct"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Container = "c-1"
			c, err := NewContainer(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := c.Credential()
			if got.Kind != tt.want.Kind || got.Account != tt.want.Account || got.FromConnectionString != tt.want.FromConnectionString ||
				got.SAS.Encode() != tt.want.SAS.Encode() || (got.SAS == nil) != (tt.want.SAS == nil) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if strings.Contains(got.SAS.Encode(), sig) {
				t.Errorf("the signature is in %+v", got)
			}
		})
	}
}

// Check is NewElector's check, and RenewTiming what the keeper gives a
// renewal.
func TestConfigCheckAndRenewTiming(t *testing.T) {
	if _, err := (Config{Duration: 5 * time.Second, Identity: "x"}).Check(); !errors.As(err, new(*ConfigError)) {
		t.Errorf("5s: %v, want a ConfigError", err)
	}
	for _, tt := range []struct {
		duration, grace time.Duration
		window, try     time.Duration
	}{
		{15 * time.Second, 10 * time.Second, 3500 * time.Millisecond, 3500 * time.Millisecond / 3},
		{60 * time.Second, 10 * time.Second, 28500 * time.Millisecond, 3 * time.Second},
		{15 * time.Second, 0, 8500 * time.Millisecond, 8500 * time.Millisecond / 3},
	} {
		cfg, err := Config{Duration: tt.duration, KillGrace: tt.grace, Identity: "x"}.Check()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RenewInterval != tt.duration/3 || cfg.PollInterval != DefaultPollInterval {
			t.Errorf("%s: defaults not filled: %+v", tt.duration, cfg)
		}
		l := newLease(&Blob{c: &Container{}}, cfg, nil, "id", time.Now(), time.Time{})
		if window, try := cfg.RenewTiming(); window != tt.window || try != tt.try || try != l.renewTry() {
			t.Errorf("%s, grace %s: RenewTiming %s, %s; want %s, %s, and the keeper's %s", tt.duration, tt.grace, window, try, tt.window, tt.try, l.renewTry())
		}
	}
}

func TestWritesRefused(t *testing.T) {
	for _, tt := range []struct {
		s    ContainerSettings
		want string
	}{
		{ContainerSettings{}, ""},
		{ContainerSettings{LegalHold: true}, "a legal hold: the service refuses every change"},
		{ContainerSettings{ImmutabilityPolicy: true}, "an immutability policy: the service refuses"},
		{ContainerSettings{ImmutabilityPolicy: true, LegalHold: true}, "an immutability policy and a legal hold: "},
	} {
		got := tt.s.WritesRefused()
		if !strings.HasPrefix(got, tt.want) || (tt.want == "") != (got == "") {
			t.Errorf("%+v: %q, want %q…", tt.s, got, tt.want)
		}
		if got != "" && !strings.HasSuffix(got, "; use a container without one (--container)") {
			t.Errorf("%+v: %q has no fix", tt.s, got)
		}
	}
}
