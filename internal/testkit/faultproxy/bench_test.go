package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkPassThrough times one lease renew (a PUT with no body) per
// operation, straight to the fake service and through the proxy in normal
// mode; the difference is the proxy's cost.
func BenchmarkPassThrough(b *testing.B) {
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ms-lease-id", "0f8fad5b-d9cb-469f-a165-70867728950e")
		w.WriteHeader(http.StatusOK)
	})
	ts := httptest.NewServer(backend)
	b.Cleanup(ts.Close)
	srv := ts.URL
	p, err := New(srv)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })

	for _, bc := range []struct{ name, base string }{
		{"direct", srv},
		{"proxy", p.URL()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr := &http.Transport{Proxy: nil}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			url := bc.base + "/devstoreaccount1/leaderrun/lock?comp=lease"
			b.ReportAllocs()
			for b.Loop() {
				req, err := http.NewRequest(http.MethodPut, url, nil)
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("x-ms-lease-action", "renew")
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
