package lease

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/hashicorp/go-hclog"
)

// refusal is a ResponseError as the SDK makes it from an answer: the raw
// response keeps the request (with the SDK's lowercase x-ms-version) and
// the body.
func refusal(method string, status int, code, body string) *azcore.ResponseError {
	req, _ := http.NewRequest(method, "https://acct.blob.core.windows.net/c/lock", nil)
	req.Header["x-ms-version"] = []string{"2026-06-06"}
	resp := &http.Response{StatusCode: status, Header: http.Header{"X-Ms-Error-Code": {code}},
		Body: io.NopCloser(strings.NewReader(body)), Request: req}
	return &azcore.ResponseError{StatusCode: status, ErrorCode: code, RawResponse: resp}
}

// Each account setting is one plain line, cause and fix, in the error of
// whatever request meets it; none of them is mistaken for a conflict.
func TestAccountSettingRefusals(t *testing.T) {
	const versionBody = `<?xml version="1.0" encoding="utf-8"?><Error><Code>InvalidHeaderValue</Code>` +
		`<Message>The value for one of the HTTP headers is not in the correct format.</Message>` +
		`<HeaderName>x-ms-version</HeaderName><HeaderValue>2026-06-06</HeaderValue></Error>`
	tests := []struct {
		name    string
		auth    authMode
		err     *azcore.ResponseError
		setting setting
		kind    errKind
		says    []string // in the error's one line; none: no account hint
	}{
		{"shared key disabled", authSharedKey, refusal("PUT", 403, "KeyBasedAuthenticationNotPermitted", ""), settingKeyAuthOff, kindPermanent,
			[]string{"403 KeyBasedAuthenticationNotPermitted", "shared-key access is disabled", "AllowSharedKeyAccess=false",
				"use Microsoft Entra ID", "'Storage Blob Data Contributor' role on container c", "user delegation SAS"}},
		{"shared key disabled, SAS", authSAS, refusal("HEAD", 403, "KeyBasedAuthenticationNotPermitted", ""), settingKeyAuthOff, kindPermanent,
			[]string{"shared-key access is disabled"}},
		{"legal hold", authEntra, refusal("PUT", 409, "BlobImmutableDueToLegalHold", ""), settingLegalHold, kindPermanent,
			[]string{"409 BlobImmutableDueToLegalHold", "container c has a legal hold", "refuses every change", "--container"}},
		{"container legal hold", authEntra, refusal("DELETE", 409, "ContainerHasLegalHold", ""), settingLegalHold, kindPermanent,
			[]string{"container c has a legal hold"}},
		{"immutability policy", authEntra, refusal("DELETE", 409, "BlobImmutableDueToPolicy", ""), settingImmutability, kindPermanent,
			[]string{"409 BlobImmutableDueToPolicy", "container c has an immutability policy"}},
		{"API version", authSharedKey, refusal("PUT", 400, "InvalidHeaderValue", versionBody), settingVersion, kindPermanent,
			[]string{"400 InvalidHeaderValue", "does not accept API version 2026-06-06", "Azure Stack Hub", "Azurite 3.37 or later"}},
		{"API version, HEAD", authSharedKey, refusal("HEAD", 400, "InvalidHeaderValue", ""), settingVersion, kindPermanent,
			[]string{"does not accept API version 2026-06-06"}},
		{"API version, the emulator's words", authSharedKey,
			refusal("GET", 400, "InvalidHeaderValue", "<Error><Code>InvalidHeaderValue</Code><Message>The API version 2099-01-01 is not supported by Azurite.</Message></Error>"),
			settingVersion, kindPermanent, []string{"does not accept API version 2026-06-06"}},
		{"another header", authSharedKey,
			refusal("PUT", 400, "InvalidHeaderValue", "<Error><Code>InvalidHeaderValue</Code><HeaderName>x-ms-lease-duration</HeaderName></Error>"),
			settingNone, kindPermanent, nil},
		{"a lease conflict", authSharedKey, refusal("PUT", 409, "LeaseIdMismatchWithBlobOperation", ""), settingNone, kindConflict, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Container{src: credentialSource{auth: tt.auth}, name: "c"}
			se := c.mapError("op", tt.err)
			if se.setting != tt.setting || se.kind != tt.kind {
				t.Errorf("setting %d kind %d, want %d and %d", se.setting, se.kind, tt.setting, tt.kind)
			}
			line := se.Error()
			for _, want := range tt.says {
				if !strings.Contains(line, want) {
					t.Errorf("%q does not say %q", line, want)
				}
			}
			if tt.says == nil && c.accountHint(se.setting, tt.err) != "" {
				t.Errorf("an account hint for %q", line)
			}
			if strings.Contains(line, "\n") {
				t.Errorf("not one line: %q", line)
			}
		})
	}
}

// fakeLister answers a listing with blobs.
type fakeLister struct {
	containerAPI // nil: a listing only
	blobs        []listedBlob
}

func (f fakeLister) listBlobs(context.Context, string, listMode) ([]listedBlob, answer, error) {
	return f.blobs, answer{Date: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}, nil
}

// A hierarchical namespace lists its directories as blobs: List leaves
// them out, so neither list, completion nor the slot poll sees them.
func TestListLeavesOutDirectories(t *testing.T) {
	c := &Container{log: hclog.NewNullLogger(), api: fakeLister{blobs: []listedBlob{
		{Name: "cron", Metadata: map[string]string{"hdi_isfolder": "true"}},
		{Name: "cron/report", LeaseState: "available", Metadata: map[string]string{"term": "3"}},
		{Name: "job~done", Metadata: map[string]string{"hdi_isfolder": "true"}},
	}}}
	listed, _, err := c.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Name != "cron/report" || listed[0].Props.Term != 3 || listed[0].Props.Directory {
		t.Errorf("listed %+v, want cron/report alone", listed)
	}
}

// A lease blob that is a directory is refused before anything is written
// to it, and the lease acquired on it is given back.
func TestAcquireRefusesADirectory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.meta = map[string]string{"hdi_isfolder": "true"}
		s.setAllow(opAcquire, opGetProps, opRelease)
		_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true})
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), `"lock" is a directory on this account`) {
			t.Fatalf("Acquire: %v, want a ConfigError naming the directory", err)
		}
		if s.count(opSetMeta) != 0 {
			t.Error("the directory's metadata was written")
		}
		if s.leaseState() == StateLeased {
			t.Error("the lease acquired on the directory was kept")
		}
	})
}
