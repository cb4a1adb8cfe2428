package faultproxy

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestAccount(t *testing.T) {
	const (
		blob      = "/devstoreaccount1/leaderrun/cron%2Freport"
		container = "/devstoreaccount1/leaderrun"
	)
	key := http.Header{"Authorization": {"SharedKey devstoreaccount1:c2lnbmF0dXJl"}, "X-Ms-Version": {"2026-06-06"}}
	bearer := http.Header{"Authorization": {"Bearer token"}, "X-Ms-Version": {"2026-06-06"}}
	type req struct {
		method, path string
		header       http.Header
		status       int    // what the client gets
		code         string // its x-ms-error-code; "" for the target's answer
		forwarded    bool
		wantHeader   string // a header the answer must carry as "true"
		body         string // in the answer's body
	}
	tests := []struct {
		name    string
		account Account
		reqs    []req
	}{
		{"hierarchical namespace", Account{HNS: true}, []req{
			{"GET", container + "?restype=account&comp=properties", key, 200, "", true, "x-ms-is-hns-enabled", ""},
			{"HEAD", blob, key, 200, "", true, "", ""},
		}},
		{"legal hold", Account{LegalHold: true}, []req{
			{"HEAD", container + "?restype=container", key, 200, "", true, "x-ms-has-legal-hold", ""},
			{"PUT", blob + "?comp=metadata", key, 409, "BlobImmutableDueToLegalHold", false, "", "legal holds"},
			{"DELETE", blob, key, 409, "BlobImmutableDueToLegalHold", false, "", ""},
			{"PUT", blob + "?comp=lease", key, 201, "", true, "", ""},
			{"HEAD", blob, key, 200, "", true, "", ""},
		}},
		{"immutability policy", Account{ImmutabilityPolicy: true}, []req{
			{"GET", container + "?restype=container", key, 200, "", true, "x-ms-has-immutability-policy", ""},
			{"PUT", blob + "?comp=metadata", key, 409, "BlobImmutableDueToPolicy", false, "", ""},
		}},
		{"shared key disabled", Account{SharedKeyDisabled: true}, []req{
			{"HEAD", blob, key, 403, "KeyBasedAuthenticationNotPermitted", false, "", ""},
			{"GET", blob + "?sv=2022-11-02&sp=r&sig=abc", nil, 403, "KeyBasedAuthenticationNotPermitted", false, "", ""},
			{"GET", blob + "?sv=2022-11-02&sp=r&skoid=x&sig=abc", nil, 200, "", true, "", ""},
			{"HEAD", blob, bearer, 200, "", true, "", ""},
		}},
		{"older service", Account{MaxVersion: "2019-07-07"}, []req{
			{"HEAD", blob, key, 400, "InvalidHeaderValue", false, "", ""},
			{"GET", blob, key, 400, "InvalidHeaderValue", false, "", "<HeaderName>x-ms-version</HeaderName><HeaderValue>2026-06-06</HeaderValue>"},
			{"GET", blob, http.Header{"X-Ms-Version": {"2019-02-02"}}, 200, "", true, "", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t, nil)
			p := newProxy(t, b.srv.URL)
			c := newClient(t, 5*time.Second)
			p.Set(Mode{Account: tt.account})
			for _, rq := range tt.reqs {
				before := b.hits.Load()
				resp, body, err := do(t, c, rq.method, p.URL()+rq.path, rq.header, nil)
				if err != nil {
					t.Fatalf("%s %s: %v", rq.method, rq.path, err)
				}
				what := rq.method + " " + rq.path
				if want := rq.status; resp.StatusCode != want && !(rq.code == "" && resp.StatusCode/100 == 2) {
					t.Errorf("%s: status %d, want %d", what, resp.StatusCode, want)
				}
				if got := resp.Header.Get("x-ms-error-code"); got != rq.code {
					t.Errorf("%s: x-ms-error-code %q, want %q", what, got, rq.code)
				}
				if got := b.hits.Load() > before; got != rq.forwarded {
					t.Errorf("%s: forwarded %v, want %v", what, got, rq.forwarded)
				}
				if rq.wantHeader != "" && resp.Header.Get(rq.wantHeader) != "true" {
					t.Errorf("%s: %s %q, want true", what, rq.wantHeader, resp.Header.Get(rq.wantHeader))
				}
				if rq.body != "" && !strings.Contains(body, rq.body) {
					t.Errorf("%s: body %q does not contain %q", what, body, rq.body)
				}
			}
		})
	}
}

func TestAccountClockOffset(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, b.srv.URL)
	c := newClient(t, 5*time.Second)
	p.Set(Mode{Account: Account{ClockOffset: 3 * time.Minute, SharedKeyDisabled: true}})
	base, _ := http.ParseTime(backendDate)

	// The target's answer: its Date, moved.
	resp, _, err := do(t, c, "HEAD", p.URL()+"/devstoreaccount1/leaderrun/job", http.Header{"Authorization": {"Bearer t"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := http.ParseTime(resp.Header.Get("Date")); !got.Equal(base.Add(3 * time.Minute)) {
		t.Errorf("forwarded Date %q, want %s", resp.Header.Get("Date"), base.Add(3*time.Minute).Format(http.TimeFormat))
	}

	// A refusal of the proxy's own: now, moved.
	resp, _, err = do(t, c, "HEAD", p.URL()+"/devstoreaccount1/leaderrun/job", http.Header{"Authorization": {"SharedKey a:b"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := http.ParseTime(resp.Header.Get("Date"))
	if off := got.Sub(time.Now()); err != nil || off < 3*time.Minute-2*time.Second || off > 3*time.Minute+time.Second {
		t.Errorf("refusal's Date %q is %s off now, want 3m", resp.Header.Get("Date"), off)
	}
}
