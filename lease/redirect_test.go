package lease

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// No redirect is ever followed: a 307 from the endpoint is the answer (an
// error naming it), and the signed request never reaches the address it
// names, so its Authorization never does either.
func TestRedirectIsNeverFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the Authorization header reached the redirect's target: %s %s", r.Method, r.URL.Path)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer other.Close()
	var asked atomic.Int32
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer endpoint.Close()

	b, err := NewLeaseBlob(ClientConfig{Container: "leases", Blob: "job", Account: devAccount, AccountKey: testKey,
		Endpoint: endpoint.URL + "/" + devAccount})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Properties(context.Background())
	var se *StorageError
	if !errors.As(err, &se) || se.StatusCode != http.StatusTemporaryRedirect || se.Transient() {
		t.Fatalf("err = %v, want a refusal answered 307", err)
	}
	if !strings.Contains(se.Hint, "redirect") {
		t.Errorf("hint %q, want one that names the redirect", se.Hint)
	}
	if asked.Load() == 0 {
		t.Fatal("the endpoint was never asked")
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests, want none", n)
	}
}
