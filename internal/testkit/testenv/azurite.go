package testenv

// The Azurite emulator: starting it with scripts/azurite.sh, and reading
// the connection string it prints.

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Storage is an emulator's connection string and what the drivers read
// from it.
type Storage struct {
	ConnString  string
	Account     string // AccountName
	Key         string // AccountKey
	Target      string // the emulator's base URL, http://127.0.0.1:PORT
	AccountPath string // the account's path on it, /devstoreaccount1
}

// ConnField returns the value of key (case-insensitive) in a connection
// string, "" when it has none.
func ConnField(connString, key string) string {
	for part := range strings.SplitSeq(connString, ";") {
		if k, v, ok := strings.Cut(part, "="); ok && strings.EqualFold(strings.TrimSpace(k), key) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// ParseStorage reads an emulator's connection string: it must have an
// AccountName, an AccountKey and a plain-http BlobEndpoint on a loopback
// address (Azurite's, as scripts/azurite.sh start prints it).
func ParseStorage(connString string) (*Storage, error) {
	s := &Storage{ConnString: connString, Account: ConnField(connString, "AccountName"), Key: ConnField(connString, "AccountKey")}
	endpoint := ConnField(connString, "BlobEndpoint")
	if s.Account == "" || s.Key == "" || endpoint == "" {
		return nil, fmt.Errorf("testenv: the connection string needs AccountName, AccountKey and BlobEndpoint (scripts/azurite.sh start prints one)")
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("testenv: BlobEndpoint: %w", err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); u.Scheme != "http" || ((ip == nil || !ip.IsLoopback()) && host != "localhost") {
		return nil, fmt.Errorf("testenv: BlobEndpoint %s: the drivers run against an emulator on a loopback address only", u.Redacted())
	}
	s.Target = "http://" + u.Host
	s.AccountPath = strings.TrimSuffix(u.Path, "/")
	return s, nil
}

// Emulator is an Azurite instance started by StartAzurite.
type Emulator struct {
	Storage
	// PID is the emulator's process, 0 when unknown.
	PID int
	// Stop stops it.
	Stop func()
}

// StartAzurite starts the emulator with scripts/azurite.sh, in
// $AZURITE_STATE_DIR if set (the wrapper scripts set it, to stop it even if
// the driver is killed), else under work.
func StartAzurite(ctx context.Context, root, work string) (*Emulator, error) {
	state := os.Getenv("AZURITE_STATE_DIR")
	if state == "" {
		state = filepath.Join(work, "azurite")
	}
	script := filepath.Join(root, "scripts", "azurite.sh")
	env := append(os.Environ(), "AZURITE_STATE_DIR="+state)
	cmd := exec.CommandContext(ctx, script, "start")
	cmd.Env, cmd.Stderr = env, os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/azurite.sh start: %w", err)
	}
	stop := func() {
		c := exec.Command(script, "stop")
		c.Env, c.Stderr = env, os.Stderr
		_ = c.Run()
	}
	s, err := ParseStorage(strings.TrimSpace(string(out)))
	if err != nil {
		stop()
		return nil, fmt.Errorf("scripts/azurite.sh start: %w", err)
	}
	e := &Emulator{Storage: *s, Stop: stop}
	if b, err := os.ReadFile(filepath.Join(state, "pid")); err == nil {
		e.PID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	return e, nil
}
