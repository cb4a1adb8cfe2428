package e2e

// Microsoft Entra ID end to end: the built binary, with no storage secret in
// its environment, gets a token from a managed identity of the App Service
// kind (IDENTITY_ENDPOINT, IDENTITY_HEADER) served here, and presents it to
// a second Azurite that accepts bearer tokens (--oauth basic, over HTTPS with
// a certificate made here and trusted through SSL_CERT_FILE). Azurite checks
// a token's issuer, audience and times, not its signature, so the test signs
// nothing.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

const (
	storageAudience = "https://storage.azure.com"
	identityHeader  = "identity-header-for-tests-only"
)

// managedIdentity starts an emulator that takes OAuth over TLS and a
// managed-identity endpoint, and returns leaderrun's binary, a working
// directory and the environment that authenticates through that identity
// alone (no account key, no Azure CLI login), with a container of prefix.
func managedIdentity(t *testing.T, prefix string) (bin, dir string, env []string, mi *identityEndpoint) {
	t.Helper()
	azurite := azuriteBinary(t)
	bin = leaderrunBinary(t)
	dir = t.TempDir()
	cert, key := writeCertificate(t, dir)
	mi = newIdentityEndpoint(t)
	port := startOAuthAzurite(t, azurite, cert, key)
	env = []string{
		"AZURE_STORAGE_ACCOUNT=devstoreaccount1",
		"LEADERRUN_ENDPOINT=https://127.0.0.1:" + strconv.Itoa(port) + "/devstoreaccount1",
		"LEADERRUN_CONTAINER=" + prefix + testenv.RandHex(6),
		"SSL_CERT_FILE=" + cert,
		"IDENTITY_ENDPOINT=" + mi.url,
		"IDENTITY_HEADER=" + identityHeader,
		"HOME=" + dir, // no Azure CLI login to fall back on
		"MSI_ENDPOINT=", "MSI_SECRET=", "IMDS_ENDPOINT=",
	}
	return bin, dir, env, mi
}

func TestManagedIdentityEndToEnd(t *testing.T) {
	bin, dir, env, mi := managedIdentity(t, "mi-")
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "AZURE_") && !strings.HasPrefix(k, "LEADERRUN_") && !strings.HasPrefix(k, "IDENTITY_") &&
			!strings.HasPrefix(k, "MSI_") && k != "IMDS_ENDPOINT" && k != "HOME" && k != "SSL_CERT_FILE" {
			env = append(env, kv)
		}
	}
	run := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = env, dir
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		start := time.Now()
		err := cmd.Run()
		t.Logf("leaderrun %s: %v (%v)", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), err)
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return o.String(), e.String(), cmd.ProcessState.ExitCode()
	}

	// A run of a command.
	if _, stderr, code := run("-l", "mi/run", "--", "sh", "-c", `echo "$LEADERRUN_TERM" > term`); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "term")); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Fatalf("the command did not run at term 1: %q, %v", b, err)
	}
	if n := mi.tokens(); n == 0 {
		t.Fatal("no token was asked of the managed identity endpoint")
	}

	// status reads what the run recorded.
	stdout, stderr, code := run("status", "-l", "mi/run", "-o", "json")
	var st struct {
		State   string `json:"state"`
		Term    int    `json:"term"`
		LastRun struct {
			ExitCode *int `json:"exitCode"`
		} `json:"lastRun"`
	}
	if err := json.Unmarshal([]byte(stdout), &st); code != 0 || err != nil || st.State != "available" || st.Term != 1 ||
		st.LastRun.ExitCode == nil || *st.LastRun.ExitCode != 0 {
		t.Fatalf("status: exit %d, %+v (%v)\n%s%s", code, st, err, stdout, stderr)
	}

	// break ends a holder's lease: the holder stops its command (exit 76).
	holder := exec.Command(bin, "-l", "mi/held", "--kill-grace", "1s", "--", "sh", "-c", "touch running; exec sleep 60")
	holder.Env, holder.Dir = env, dir
	var holderErr bytes.Buffer
	holder.Stderr = &holderErr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill() })
	waitForFile(t, filepath.Join(dir, "running"), 30*time.Second)
	if _, stderr, code := run("break", "-l", "mi/held", "--now"); code != 0 {
		t.Fatalf("break: exit %d\n%s", code, stderr)
	}
	if stdout, stderr, code := run("status", "-l", "mi/held"); code != 0 || !strings.Contains(stdout, "broken") {
		t.Errorf("status after break: exit %d\n%s%s", code, stdout, stderr)
	}
	err := holder.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 76 {
		t.Errorf("the holder of a broken lease: %v, want exit 76\n%s", err, holderErr.String())
	}

	// A token for another audience is refused: exit 69, one line, no token.
	mi.setAudience("https://vault.azure.net")
	before := mi.tokens()
	stdout, stderr, code = run("-l", "mi/other", "--", "touch", "ran")
	t.Logf("refused run: %s", stderr)
	if code != 69 {
		t.Errorf("a token for another audience: exit %d, want 69\n%s", code, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || lines[0] == "" {
		t.Errorf("want one line on stderr, got %d:\n%s", len(lines), stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran without the lease")
	}
	if mi.tokens() == before {
		t.Error("no token was asked for the refused run")
	}
	for _, token := range mi.issued() {
		for _, part := range strings.Split(token, ".") {
			if len(part) > 8 && strings.Contains(stdout+stderr, part) {
				t.Errorf("the output holds the token:\n%s%s", stdout, stderr)
			}
		}
	}
	if mi.badHeader() != 0 {
		t.Errorf("%d token requests without the identity header", mi.badHeader())
	}
}

// azuriteBinary is the emulator that scripts/azurite.sh installs; without it
// the test skips, except under CI=true.
func azuriteBinary(t *testing.T) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "scripts", "azurite", "node_modules", ".bin", "azurite-blob"))
	if err == nil {
		if _, err = os.Stat(path); err == nil {
			if _, err = exec.LookPath("node"); err == nil {
				return path
			}
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the Azurite emulator is not installed (%v): run scripts/azurite.sh install", err)
	}
	t.Skipf("the Azurite emulator is not installed (%v): scripts/azurite.sh install", err)
	return ""
}

// writeCertificate makes a self-signed certificate for 127.0.0.1 and
// localhost, and returns the paths of its PEM files.
func writeCertificate(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "leaderrun test emulator"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// startOAuthAzurite starts Azurite's blob service on a free loopback port,
// over HTTPS, accepting bearer tokens, and stops it (by its PID) when the
// test ends.
func startOAuthAzurite(t *testing.T, bin, cert, key string) int {
	t.Helper()
	logFile := filepath.Join(t.TempDir(), "azurite.log")
	for range 3 {
		port := freePort(t)
		log, err := os.Create(logFile)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port), "--inMemoryPersistence",
			"--silent", "--loose", "--disableTelemetry",
			"--oauth", "basic", "--cert", cert, "--key", key)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
				conn.Close()
				t.Cleanup(stop)
				return port
			}
			select {
			case <-exited:
				deadline = time.Time{} // it did not start: try another port
			case <-time.After(50 * time.Millisecond):
			}
		}
		stop()
	}
	b, _ := os.ReadFile(logFile)
	t.Fatalf("Azurite with --oauth basic did not start:\n%s", b)
	return 0
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitForFile(t *testing.T, path string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear within %v", path, d)
}

// identityEndpoint is an App Service managed identity endpoint: it answers
// GET ?api-version=2019-08-01&resource=R with header X-IDENTITY-HEADER
// with an unsigned token for its audience.
type identityEndpoint struct {
	url string

	mu       sync.Mutex
	audience string
	issuedTo []string
	refused  int
}

func newIdentityEndpoint(t *testing.T) *identityEndpoint {
	mi := &identityEndpoint{audience: storageAudience}
	srv := httptest.NewServer(http.HandlerFunc(mi.serve))
	t.Cleanup(srv.Close)
	mi.url = srv.URL + "/msi/token"
	return mi
}

func (mi *identityEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	q := r.URL.Query()
	if r.Header.Get("X-IDENTITY-HEADER") != identityHeader || q.Get("api-version") != "2019-08-01" {
		mi.refused++
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{
		"iss": "https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/",
		"aud": mi.audience, "iat": now.Unix() - 60, "nbf": now.Unix() - 60, "exp": now.Add(time.Hour).Unix(),
		"oid": "00000000-0000-0000-0000-00000000a11d", "tid": "72f988bf-86f1-41af-91ab-2d7cd011db47",
	})
	enc := base64.RawURLEncoding.EncodeToString
	token := enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(claims) + "."
	mi.issuedTo = append(mi.issuedTo, token)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{
		"access_token": token, "expires_on": strconv.FormatInt(now.Add(time.Hour).Unix(), 10),
		"resource": q.Get("resource"), "token_type": "Bearer",
	})
}

func (mi *identityEndpoint) setAudience(aud string) {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	mi.audience = aud
}

func (mi *identityEndpoint) tokens() int {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	return len(mi.issuedTo)
}

func (mi *identityEndpoint) issued() []string {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	return append([]string(nil), mi.issuedTo...)
}

func (mi *identityEndpoint) badHeader() int {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	return mi.refused
}
