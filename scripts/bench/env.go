package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/chaos"
	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// binaries are what the bench builds.
type binaries struct {
	leaderrun string // go build -o … .
	stripped  string // the same with -ldflags "-s -w", for its size only
	child     string // the chaos child (internal/testkit/chaos/child)
}

// etcdServer is the etcd the bench started for the side-by-side runs.
type etcdServer struct {
	endpoint string // 127.0.0.1:PORT
	version  string
	ctl      string // etcdctl's path
	proc     *testenv.Process
}

// machine describes where the bench ran.
type machine struct {
	cpus     int
	cpuModel string
	memory   string
	kernel   string
	goVer    string
	loadAt   [2]string // /proc/loadavg at the start and at the end
	flockVer string
}

// build builds leaderrun (plain and stripped) and the chaos child.
func build(ctx context.Context, root, dir string) (binaries, error) {
	bins := binaries{
		leaderrun: filepath.Join(dir, "leaderrun"),
		stripped:  filepath.Join(dir, "leaderrun-stripped"),
		child:     filepath.Join(dir, "chaoschild"),
	}
	if err := testenv.Build(ctx, root, ".", bins.leaderrun); err != nil {
		return bins, err
	}
	if err := testenv.Build(ctx, root, ".", bins.stripped, "-ldflags=-s -w"); err != nil {
		return bins, err
	}
	if err := testenv.Build(ctx, root, chaos.ChildPackage, bins.child); err != nil {
		return bins, err
	}
	return bins, nil
}

// azuriteVersion is the pinned version in scripts/azurite/package.json.
func azuriteVersion(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "scripts", "azurite", "package.json"))
	if err != nil {
		return "?"
	}
	s := string(b)
	if i := strings.Index(s, `"azurite":`); i >= 0 {
		rest := s[i+len(`"azurite":`):]
		if j := strings.IndexByte(rest, '"'); j >= 0 {
			if k := strings.IndexByte(rest[j+1:], '"'); k >= 0 {
				return rest[j+1 : j+1+k]
			}
		}
	}
	return "?"
}

// startEtcd starts a single-member etcd on two free loopback ports with its
// data in work/etcd, and waits until it answers. It returns a reason
// instead when etcd is not installed or does not come up.
func (b *bench) startEtcd(ctx context.Context) (*etcdServer, string) {
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, "etcd is not installed (Debian: apt-get install etcd-server etcd-client)"
	}
	ctl, err := exec.LookPath("etcdctl")
	if err != nil {
		return nil, "etcdctl is not installed (Debian: apt-get install etcd-client)"
	}
	ver := "etcd"
	if out, err := exec.Command(etcdBin, "--version").Output(); err == nil {
		ver = strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
		ver = strings.Replace(ver, "Version: ", "", 1) // "etcd Version: 3.4.23"
	}
	for attempt := 0; attempt < 3; attempt++ {
		client, peer := freePort(), freePort()
		if client == "" || peer == "" {
			return nil, "no free loopback port for etcd"
		}
		dir := filepath.Join(b.work, fmt.Sprintf("etcd-%d", attempt))
		argv := []string{etcdBin, "--name", "bench", "--data-dir", dir,
			"--listen-client-urls", "http://" + client, "--advertise-client-urls", "http://" + client,
			"--listen-peer-urls", "http://" + peer, "--initial-advertise-peer-urls", "http://" + peer,
			"--initial-cluster", "bench=http://" + peer}
		p, err := b.launch("etcd", filepath.Join(b.work, "etcd.log"), testenv.BaseEnv(), argv)
		if err != nil {
			return nil, "etcd did not start: " + err.Error()
		}
		s := &etcdServer{endpoint: client, version: ver, ctl: ctl, proc: p}
		up := waitFor(ctx, 15*time.Second, func() bool {
			if p.Exited() {
				return true
			}
			c := exec.Command(ctl, "--endpoints="+client, "--command-timeout=1s", "endpoint", "health")
			c.Env = s.env()
			return c.Run() == nil
		})
		if up && !p.Exited() {
			return s, ""
		}
		p.Stop(5 * time.Second)
		if ctx.Err() != nil {
			return nil, "interrupted"
		}
	}
	return nil, "etcd did not become healthy (see etcd.Log)"
}

// env is the environment of etcdctl.
func (s *etcdServer) env(extra ...string) []string {
	return append(append(testenv.BaseEnv(), "ETCDCTL_API=3"), extra...)
}

// lockArgv is `etcdctl --endpoints=… lock [--ttl N] NAME -- argv…`.
func (s *etcdServer) lockArgv(name string, ttl int, argv ...string) []string {
	out := []string{s.ctl, "--endpoints=" + s.endpoint, "lock"}
	if ttl > 0 {
		out = append(out, fmt.Sprintf("--ttl=%d", ttl))
	}
	// "--" keeps the command's own flags from etcdctl's parser.
	out = append(out, name, "--")
	return append(out, argv...)
}

// freePort returns "127.0.0.1:PORT" of a port free a moment ago.
func freePort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ""
	}
	defer ln.Close()
	return ln.Addr().String()
}

// direct is the environment of a leaderrun that talks to the emulator
// directly.
func (b *bench) direct(extra ...string) []string {
	return append(append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+b.az.ConnString), extra...)
}

// viaProxy is the environment and the endpoint flags of a leaderrun whose
// requests go through p (so that they are counted).
func (b *bench) viaProxy(p *faultproxy.Proxy) (env, flags []string) {
	env = append(testenv.BaseEnv(), "AZURE_STORAGE_ACCOUNT="+b.az.Account, "AZURE_STORAGE_KEY="+b.az.Key)
	return env, []string{"--endpoint", p.URL() + b.az.AccountPath}
}

// lr is leaderrun's argv: -l lease --container C flags… -- command….
func (b *bench) lr(lease string, flags []string, command ...string) []string {
	argv := append([]string{b.bin.leaderrun, "-l", lease, "--container", b.container}, flags...)
	return append(append(argv, "--"), command...)
}

// describeMachine reads the machine's description.
func describeMachine() machine {
	m := machine{cpus: runtime.NumCPU(), goVer: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpuModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == "MemTotal" {
				m.memory = fmt.Sprintf("%.0f GiB", float64(kB(v))/1024/1024)
			}
		}
	}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.goVer = strings.TrimPrefix(strings.TrimSpace(string(out)), "go version ")
	}
	if out, err := exec.Command("flock", "--version").Output(); err == nil {
		m.flockVer = strings.TrimSpace(string(out))
	}
	m.loadAt[0] = loadavg()
	return m
}

// loadavg is the 1-, 5- and 15-minute load average.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
