package e2e

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// childMain is lrchild, the COMMAND that the end-to-end scripts run under
// leaderrun. It records its life so the scripts can check what happened.
func childMain() {
	fs := flag.NewFlagSet("lrchild", flag.ExitOnError)
	logPath := fs.String("log", "", "append begin/beat/end records to this file")
	runFor := fs.Duration("for", 0, "run this long, then exit")
	wait := fs.Bool("wait", false, "run until a signal ends it")
	exitCode := fs.Int("exit", 0, "exit with this status")
	touch := fs.String("touch", "", "create this file once running")
	envFile := fs.String("env", "", "write the LEADERRUN_* environment to this file")
	ignoreTerm := fs.Bool("ignore-term", false, "ignore SIGTERM")
	onTerm := fs.String("on-term", "", "on SIGTERM, create this file, run -term-delay longer, then exit -exit")
	termDelay := fs.Duration("term-delay", time.Second, "with -on-term: how long shutting down takes")
	grandchild := fs.String("grandchild", "", "start a grandchild (lrchild -ignore-term) that writes its pid to this file")
	sigIgn := fs.String("sigign", "", "write the signals it inherited ignored (SigIgn), one name a line, to this file")
	_ = fs.Parse(os.Args[1:])

	record := func(event string) {
		if *logPath == "" {
			return
		}
		f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lrchild:", err)
			os.Exit(99)
		}
		fmt.Fprintf(f, "%s %d %d %s %s slot=%s\n", event, time.Now().UnixNano(), os.Getpid(), os.Getenv("LEADERRUN_TERM"), os.Getenv("LEADERRUN_IDENTITY"), os.Getenv("LEADERRUN_SLOT"))
		f.Close()
	}
	record("begin")
	if *envFile != "" {
		var b strings.Builder
		for _, kv := range os.Environ() {
			if strings.HasPrefix(kv, "LEADERRUN_") {
				b.WriteString(kv + "\n")
			}
		}
		if err := os.WriteFile(*envFile, []byte(b.String()), 0o644); err != nil {
			os.Exit(99)
		}
	}
	if *sigIgn != "" {
		if err := os.WriteFile(*sigIgn, []byte(ignoredSignals()), 0o644); err != nil {
			os.Exit(99)
		}
	}
	if *grandchild != "" {
		gc := exec.Command(os.Args[0], "-wait", "-ignore-term", "-touch", *grandchild+".started")
		if err := gc.Start(); err != nil {
			os.Exit(99)
		}
		if err := os.WriteFile(*grandchild, []byte(fmt.Sprint(gc.Process.Pid)), 0o644); err != nil {
			os.Exit(99)
		}
	}
	sigs := make(chan os.Signal, 4)
	switch {
	case *ignoreTerm:
		signal.Ignore(syscall.SIGTERM)
	case *onTerm != "":
		signal.Notify(sigs, syscall.SIGTERM)
	}
	if *touch != "" {
		if err := os.WriteFile(*touch, nil, 0o644); err != nil {
			os.Exit(99)
		}
	}
	var done <-chan time.Time
	if !*wait {
		done = time.After(*runFor)
	}
	beat := time.NewTicker(50 * time.Millisecond)
	for {
		select {
		case <-done:
			record("end")
			os.Exit(*exitCode)
		case <-sigs:
			_ = os.WriteFile(*onTerm, nil, 0o644)
			time.Sleep(*termDelay)
			record("end")
			os.Exit(*exitCode)
		case <-beat.C:
			record("beat")
		}
	}
}

// ignoredSignals lists the signals this process inherited ignored, from
// SigIgn in /proc/self/status (Linux), one name (SIGHUP) a line.
func ignoredSignals() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	var out strings.Builder
	for line := range strings.SplitSeq(string(b), "\n") {
		mask, ok := strings.CutPrefix(line, "SigIgn:")
		if !ok {
			continue
		}
		bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
		if err != nil {
			return ""
		}
		for sig := 1; sig <= 64; sig++ {
			if bits&(1<<(sig-1)) != 0 {
				if name := unix.SignalName(syscall.Signal(sig)); name != "" {
					out.WriteString(name + "\n")
				}
			}
		}
	}
	return out.String()
}

// notifyListenMain is notifylisten SOCKET OUT DURATION: it stands in for
// systemd, receiving sd_notify datagrams on the unixgram SOCKET and
// appending each to OUT as a line, for DURATION or until SIGINT.
func notifyListenMain() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: notifylisten SOCKET OUT DURATION")
		os.Exit(2)
	}
	d, err := time.ParseDuration(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: os.Args[1], Net: "unixgram"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := os.OpenFile(os.Args[2], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = conn.SetReadDeadline(time.Now().Add(d))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	go func() {
		<-stop // the script is done listening
		_ = conn.SetReadDeadline(time.Now())
	}()
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			os.Exit(0)
		}
		fmt.Fprintf(out, "%s\n", buf[:n])
	}
}
