package lease

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

const (
	testKey = "a2V5LWZvci10ZXN0cy1vbmx5LW5vdC1hLXJlYWwtc2VjcmV0LWtleS0xMjM0NTY3OA=="
	testSAS = "sv=2024-08-04&ss=b&srt=sco&sp=rwac&se=2030-01-01T00:00:00Z&sig=c2VjcmV0LXNpZ25hdHVyZQ%3D%3D"
)

func TestNewClientConfigErrors(t *testing.T) {
	base := ClientConfig{Container: "leaderrun", Blob: "cron/report", Account: "acct"}
	for _, tc := range []struct {
		name  string
		edit  func(*ClientConfig)
		field string // "" = valid
	}{
		{"entra with account", func(c *ClientConfig) {}, ""},
		{"key", func(c *ClientConfig) { c.AccountKey = testKey }, ""},
		{"sas", func(c *ClientConfig) { c.SASToken = "?" + testSAS }, ""},
		{"sas with endpoint only", func(c *ClientConfig) {
			c.Account, c.SASToken, c.Endpoint = "", testSAS, "https://acct.blob.core.windows.net/"
		}, ""},
		{"dev storage", func(c *ClientConfig) { c.ConnectionString = "UseDevelopmentStorage=true" }, ""},
		{"no account, no endpoint", func(c *ClientConfig) { c.Account = "" }, "storage account"},
		{"bad account", func(c *ClientConfig) { c.Account = "Bad.Host" }, "storage account"},
		{"key without account", func(c *ClientConfig) { c.Account, c.AccountKey, c.Endpoint = "", testKey, "https://x.example" }, "credentials"},
		{"key not base64", func(c *ClientConfig) { c.AccountKey = "not base64!" }, "credentials"},
		{"container too short", func(c *ClientConfig) { c.Container = "ab" }, "container name"},
		{"container too long", func(c *ClientConfig) { c.Container = strings.Repeat("a", 64) }, "container name"},
		{"container 63", func(c *ClientConfig) { c.Container = strings.Repeat("a", 63) }, ""},
		{"container upper", func(c *ClientConfig) { c.Container = "Leaderrun" }, "container name"},
		{"container double hyphen", func(c *ClientConfig) { c.Container = "a--b" }, "container name"},
		{"container leading hyphen", func(c *ClientConfig) { c.Container = "-ab" }, "container name"},
		{"container trailing hyphen", func(c *ClientConfig) { c.Container = "ab-" }, "container name"},
		{"container underscore", func(c *ClientConfig) { c.Container = "a_b" }, "container name"},
		{"container ok", func(c *ClientConfig) { c.Container = "a-1-b" }, ""},
		{"empty blob", func(c *ClientConfig) { c.Blob = "" }, "lease name"},
		{"blob empty segment", func(c *ClientConfig) { c.Blob = "a//b" }, "lease name"},
		{"blob dot-dot", func(c *ClientConfig) { c.Blob = "a/../b" }, "lease name"},
		{"blob trailing slash", func(c *ClientConfig) { c.Blob = "a/" }, "lease name"},
		{"blob control", func(c *ClientConfig) { c.Blob = "a\nb" }, "lease name"},
		{"blob spaces", func(c *ClientConfig) { c.Blob = "my job/run 1" }, ""},
		{"http to a remote host", func(c *ClientConfig) { c.Endpoint = "http://acct.blob.core.windows.net" }, "endpoint"},
		{"http to 127.0.0.5", func(c *ClientConfig) { c.Endpoint = "http://127.0.0.5:10000/devstoreaccount1"; c.AccountKey = testKey }, ""},
		{"http to ::1", func(c *ClientConfig) { c.Endpoint = "http://[::1]:10000/devstoreaccount1"; c.AccountKey = testKey }, ""},
		{"http to localhost", func(c *ClientConfig) { c.Endpoint = "http://localhost:10000/devstoreaccount1"; c.AccountKey = testKey }, ""},
		{"http to 10.0.0.1", func(c *ClientConfig) { c.Endpoint = "http://10.0.0.1:10000/devstoreaccount1" }, "endpoint"},
		{"endpoint with query", func(c *ClientConfig) { c.Endpoint = "https://acct.blob.core.windows.net/?" + testSAS }, "endpoint"},
		{"endpoint with user", func(c *ClientConfig) { c.Endpoint = "https://u:p@acct.blob.core.windows.net" }, "endpoint"},
		{"endpoint ftp", func(c *ClientConfig) { c.Endpoint = "ftp://acct.blob.core.windows.net" }, "endpoint"},
		{"endpoint relative", func(c *ClientConfig) { c.Endpoint = "acct.blob.core.windows.net" }, "endpoint"},
		{"conn string over http remote", func(c *ClientConfig) {
			c.ConnectionString = "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=" + testKey
		}, "endpoint"},
		{"conn string without secret", func(c *ClientConfig) { c.ConnectionString = "AccountName=acct" }, "connection string"},
		{"conn string garbage", func(c *ClientConfig) { c.ConnectionString = "AccountName=acct;" + testKey }, "connection string"},
		{"conn string endpoint overridden to remote http", func(c *ClientConfig) {
			c.ConnectionString = "UseDevelopmentStorage=true"
			c.Endpoint = "http://example.com"
		}, "endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			c, err := NewLeaseBlob(cfg)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if strings.Contains(c.URL(), "?") || !strings.HasSuffix(c.URL(), "/"+cfg.Container+"/"+escapeBlobName(cfg.Blob)) {
					t.Errorf("URL() = %q", c.URL())
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("err = %v, want a ConfigError for %s", err, tc.field)
			}
			for _, secret := range []string{testKey, "sig=", "c2VjcmV0"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q contains a secret", err)
				}
			}
		})
	}
}

func TestParseConnectionString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want credentialSource
	}{
		{"UseDevelopmentStorage=true", credentialSource{auth: authSharedKey, account: devAccount, key: devKey, endpoint: devEndpoint}},
		{"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + testKey + ";BlobEndpoint=http://127.0.0.1:4242/devstoreaccount1;",
			credentialSource{auth: authSharedKey, account: "devstoreaccount1", key: testKey, endpoint: "http://127.0.0.1:4242/devstoreaccount1"}},
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + testKey + ";EndpointSuffix=core.chinacloudapi.cn",
			credentialSource{auth: authSharedKey, account: "acct", key: testKey, endpoint: "https://acct.blob.core.chinacloudapi.cn"}},
		{"BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=" + testSAS,
			credentialSource{auth: authSAS, sas: testSAS, endpoint: "https://acct.blob.core.windows.net/"}},
		{"accountname=acct;accountkey=" + testKey, credentialSource{auth: authSharedKey, account: "acct", key: testKey, endpoint: "https://acct.blob.core.windows.net"}},
	} {
		got, err := parseConnectionString(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parse: got %+v, %v; want %+v", got, err, tc.want)
		}
	}
}

func TestURLAndSASClientHideSecrets(t *testing.T) {
	c, err := NewLeaseBlob(ClientConfig{Container: "leaderrun", Blob: "cron/my report", Account: "acct", SASToken: testSAS})
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://acct.blob.core.windows.net/leaderrun/cron/my%20report"; c.URL() != want {
		t.Errorf("URL() = %q, want %q", c.URL(), want)
	}
	ue := &url.Error{Op: "Put", URL: "https://acct.blob.core.windows.net/leaderrun/cron?comp=lease&" + testSAS,
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}
	se := c.c.mapError("acquire", fmt.Errorf("wrapped: %w", ue))
	msg := se.Error()
	for _, secret := range []string{"sig", "c2VjcmV0", "comp=lease", testSAS} {
		if strings.Contains(msg, secret) {
			t.Errorf("message %q contains %q", msg, secret)
		}
	}
	if !strings.Contains(msg, "https://acct.blob.core.windows.net/leaderrun/cron") || !se.Transient() {
		t.Errorf("message %q (transient %v): want the URL without its query, transient", msg, se.Transient())
	}
	if errors.As(se, new(*url.Error)) {
		t.Error("the mapped error still holds the *url.Error (and its URL)")
	}
}

func TestMapError(t *testing.T) {
	c := &Container{name: "c", src: credentialSource{auth: authEntra, secrets: []string{"topsecret"}}}
	for _, tc := range []struct {
		name      string
		err       error
		kind      errKind
		transient bool
		gone      bool
		hint      string
	}{
		{"409 held", respErr(409, "LeaseAlreadyPresent"), kindHeld, false, true, ""},
		{"409 breaking", respErr(409, "LeaseIsBreakingAndCannotBeAcquired"), kindHeld, false, true, ""},
		{"409 broken", respErr(409, "LeaseIsBrokenAndCannotBeRenewed"), kindConflict, false, true, ""},
		{"409 mismatch", respErr(409, "LeaseIdMismatchWithLeaseOperation"), kindConflict, false, true, ""},
		{"409 not present", respErr(409, "LeaseNotPresentWithLeaseOperation"), kindNotLeased, false, true, ""},
		{"412", respErr(412, "LeaseIdMismatchWithBlobOperation"), kindConflict, false, true, ""},
		{"404 blob", respErr(404, "BlobNotFound"), kindBlobMissing, false, true, ""},
		{"404 container", respErr(404, "ContainerNotFound"), kindContainerMissing, false, true, ""},
		{"404 HEAD without code", respErr(404, ""), kindBlobMissing, false, true, ""},
		{"409 exists", respErr(409, "BlobAlreadyExists"), kindExists, false, true, ""},
		{"403 role", respErr(403, "AuthorizationPermissionMismatch"), kindPermanent, false, false, "Storage Blob Data Contributor"},
		{"401", respErr(401, "InvalidAuthenticationInfo"), kindPermanent, false, false, "tenant"},
		{"400", respErr(400, "InvalidHeaderValue"), kindPermanent, false, false, ""},
		{"408", respErr(408, "OperationTimedOut"), kindTransient, true, false, ""},
		{"429", respErr(429, ""), kindTransient, true, false, ""},
		{"500", respErr(500, "InternalError"), kindTransient, true, false, ""},
		{"503", respErr(503, "ServerBusy"), kindTransient, true, false, ""},
		{"deadline", context.DeadlineExceeded, kindTransient, true, false, ""},
		{"refused", &net.OpError{Op: "dial", Err: errors.New("connection refused topsecret")}, kindTransient, true, false, ""},
		{"no such host", &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, kindPermanent, false, false, "account name"},
		{"credential", nonRetriableErr{}, kindPermanent, false, false, "managed identity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := c.mapError("op", tc.err)
			if se.kind != tc.kind || se.Transient() != tc.transient || se.leaseGone() != tc.gone {
				t.Errorf("kind %d transient %v gone %v; want %d %v %v", se.kind, se.Transient(), se.leaseGone(), tc.kind, tc.transient, tc.gone)
			}
			if !strings.Contains(se.Hint, tc.hint) || (tc.hint == "" && se.Hint != "" && se.kind != kindPermanent) {
				t.Errorf("hint %q, want %q", se.Hint, tc.hint)
			}
			if !errors.Is(se, ErrUnavailable) || strings.Contains(se.Error(), "topsecret") {
				t.Errorf("error %q", se)
			}
			if strings.Contains(se.Error(), "\n") {
				t.Errorf("error %q spans lines", se)
			}
		})
	}
}

type nonRetriableErr struct{}

func (nonRetriableErr) Error() string { return "DefaultAzureCredential: failed to acquire a token" }
func (nonRetriableErr) NonRetriable() {}

func TestPropertiesParsing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		c := s.client()
		s.blobExists = false
		p, err := c.Properties(context.Background())
		if err != nil || p.Exists || p.State != StateAbsent || p.LastRun != nil || p.Metadata == nil {
			t.Fatalf("missing blob: %+v, %v", p, err)
		}
		s.blobExists = true
		s.meta = map[string]string{"holder": "vm-1", "term": "12", "leaseduration": "30",
			"acquiredat": "1999-12-31T23:59:00Z", "lastrunstart": "1999-12-31T23:59:01Z",
			"lastrunend": "1999-12-31T23:59:09Z", "lastrunholder": "vm-1", "lastexit": "0", "Foreign": "x"}
		s.holdBy("id", time.Minute, nil)
		p, err = c.Properties(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !p.Exists || p.State != StateLeased || p.Holder != "vm-1" || p.Term != 12 || p.LeaseDuration != 30*time.Second ||
			p.AcquiredAt.Format(time.RFC3339) != "1999-12-31T23:59:00Z" || p.Metadata["foreign"] != "x" || p.Date.IsZero() {
			t.Errorf("properties %+v", p)
		}
		r := p.LastRun
		if r == nil || r.Holder != "vm-1" || r.End.Sub(r.Start) != 8*time.Second || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("last run %+v", r)
		}
		s.meta = map[string]string{"term": "x", "lastexit": "y", "acquiredat": "yesterday"}
		time.Sleep(2 * time.Minute)
		p, err = c.Properties(context.Background())
		if err != nil || p.Term != 0 || !p.AcquiredAt.IsZero() || p.LastRun != nil || p.State != StateExpired {
			t.Errorf("malformed metadata: %+v, %v", p, err)
		}
		s.setHook(func(ctx context.Context, op string) error {
			return respErr(http.StatusForbidden, "AuthenticationFailed")
		})
		if _, err := c.Properties(context.Background()); !errors.Is(err, ErrUnavailable) {
			t.Errorf("403: err = %v", err)
		}
	})
}

func TestBreak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		c := s.client()
		if _, err := c.BreakLease(context.Background(), 5*time.Second); !errors.Is(err, ErrNotLeased) {
			t.Errorf("break with no lease: %v, want ErrNotLeased", err)
		}
		for _, bad := range []time.Duration{-time.Second, 61 * time.Second, 1500 * time.Millisecond} {
			var ce *ConfigError
			if _, err := c.BreakLease(context.Background(), bad); !errors.As(err, &ce) {
				t.Errorf("period %v: %v, want a ConfigError", bad, err)
			}
		}
		s.holdBy("other", 15*time.Second, nil)
		left, err := c.BreakLease(context.Background(), 10*time.Second)
		if err != nil || left != 10*time.Second || s.leaseState() != StateBreaking {
			t.Errorf("break: %v, %v, %s", left, err, s.leaseState())
		}
		time.Sleep(10 * time.Second)
		if s.leaseState() != StateBroken {
			t.Errorf("after the period: %s", s.leaseState())
		}
		s.setHook(func(ctx context.Context, op string) error {
			return respErr(http.StatusServiceUnavailable, "ServerBusy")
		})
		if _, err := c.BreakLease(context.Background(), 0); !errors.Is(err, ErrUnavailable) {
			t.Errorf("503: %v", err)
		}
	})
}

// A ResponseError made by the SDK keeps only status and code in our message.
func TestStorageErrorMessage(t *testing.T) {
	c := &Container{src: credentialSource{auth: authSharedKey}}
	se := c.mapError("renew", &azcore.ResponseError{StatusCode: 403, ErrorCode: "AuthenticationFailed"})
	want := "lease: renew: storage answered 403 AuthenticationFailed (check the account name and key, " +
		"this host's clock (key-signed requests carry its time), and the account's network rules)"
	if se.Error() != want {
		t.Errorf("got  %q\nwant %q", se.Error(), want)
	}
	se = c.mapError("renew", &azcore.ResponseError{StatusCode: 503})
	if se.Error() != "lease: renew: storage answered 503 Service Unavailable" {
		t.Errorf("got %q", se.Error())
	}
}

// The SDK's default retry policy waits for ever on a server that accepts
// and never answers; every call here must end at its context's deadline.
func TestBlackHoledServerHonoursDeadlines(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- conn // hold it, never answer
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		close(conns)
		for conn := range conns {
			conn.Close()
		}
	})
	c, err := NewLeaseBlob(ClientConfig{Account: devAccount, AccountKey: devKey,
		Endpoint: "http://" + ln.Addr().String() + "/" + devAccount, Container: "c-1", Blob: "lock"})
	if err != nil {
		t.Fatal(err)
	}
	const id = "00000000-0000-0000-0000-000000000001"
	for _, call := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"renew", func(ctx context.Context) error { _, err := c.api.renewLease(ctx, id); return err }},
		{"acquire", func(ctx context.Context) error { _, err := c.api.acquireLease(ctx, id, 15); return err }},
		{"set metadata", func(ctx context.Context) error { _, err := c.api.setMetadata(ctx, id, "", nil); return err }},
		{"properties", func(ctx context.Context) error { _, err := c.Properties(ctx); return err }},
		{"break", func(ctx context.Context) error { _, err := c.BreakLease(ctx, 0); return err }},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		err := call.do(ctx)
		cancel()
		if d := time.Since(start); err == nil || d > 2*time.Second {
			t.Errorf("%s: %v after %v, want an error at the 300 ms deadline", call.name, err, d)
		}
		if se := asStorageError(err); se != nil && !se.Transient() {
			t.Errorf("%s: %v, want a transient failure", call.name, err)
		}
	}
}
