package faultproxy

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// InFront starts a proxy in front of the emulator that connString (an Azure
// Storage connection string with a loopback BlobEndpoint) names, and
// returns it with the connection string that goes through it. Close it
// when done.
func InFront(connString string) (*Proxy, string, error) {
	var endpoint string
	for _, part := range strings.Split(connString, ";") {
		if k, v, ok := strings.Cut(part, "="); ok && strings.EqualFold(k, "BlobEndpoint") {
			endpoint = v
		}
	}
	target, err := url.Parse(endpoint)
	if err != nil || target.Host == "" {
		return nil, "", fmt.Errorf("faultproxy: no BlobEndpoint in the connection string")
	}
	p, err := New("http://" + target.Host)
	if err != nil {
		return nil, "", err
	}
	return p, strings.Replace(connString, "http://"+target.Host, p.URL(), 1), nil
}

// Start is InFront for a test: it fails t if the proxy cannot start, and
// closes the proxy when t ends.
func Start(t testing.TB, connString string) (*Proxy, string) {
	t.Helper()
	p, via, err := InFront(connString)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, via
}
