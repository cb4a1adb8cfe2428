package chaos

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
)

// ChildPackage is the chaos child's package, relative to the module root.
const ChildPackage = "./internal/chaos/child"

// Build runs `go build -o out pkg` in the module at root (pkg relative to
// it, "." for leaderrun itself).
func Build(ctx context.Context, root, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// Env is what every trial needs: the two binaries and the storage emulator.
type Env struct {
	Leaderrun string // the leaderrun binary
	Child     string // the chaos child binary (ChildPackage)

	connString  string
	account     string
	key         string
	target      string // the emulator's base URL, http://127.0.0.1:PORT
	accountPath string // the account's path on it, /devstoreaccount1
}

// NewEnv checks its arguments: connectionString must name an emulator on a
// loopback address, with an account name and key (Azurite's, printed by
// scripts/azurite.sh start); the binaries must exist.
func NewEnv(connectionString, leaderrun, child string) (*Env, error) {
	kv := map[string]string{}
	for part := range strings.SplitSeq(connectionString, ";") {
		if k, v, ok := strings.Cut(part, "="); ok {
			kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
	}
	e := &Env{Leaderrun: leaderrun, Child: child, connString: connectionString,
		account: kv["accountname"], key: kv["accountkey"]}
	endpoint := kv["blobendpoint"]
	if e.account == "" || e.key == "" || endpoint == "" {
		return nil, fmt.Errorf("chaos: the connection string needs AccountName, AccountKey and BlobEndpoint (scripts/azurite.sh start prints one)")
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("chaos: BlobEndpoint: %w", err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); u.Scheme != "http" || ((ip == nil || !ip.IsLoopback()) && host != "localhost") {
		return nil, fmt.Errorf("chaos: BlobEndpoint %s: the trials run against an emulator on a loopback address only", u.Redacted())
	}
	e.target = "http://" + u.Host
	e.accountPath = strings.TrimSuffix(u.Path, "/")
	for _, bin := range []string{leaderrun, child} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
	}
	return e, nil
}

// baseEnv is the environment of every process a trial starts: the caller's,
// without anything that would point leaderrun elsewhere (AZURE_*,
// LEADERRUN_*) or make it talk to systemd.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "AZURE_"), strings.HasPrefix(k, "LEADERRUN_"),
			k == "NOTIFY_SOCKET", k == "WATCHDOG_USEC", k == "WATCHDOG_PID":
			continue
		}
		env = append(env, kv)
	}
	return env
}
