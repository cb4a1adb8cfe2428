// Command child is the COMMAND that the chaos trials run under leaderrun. It
// records its own life in a shared file so that the trial runner can tell,
// after the fact, when it ran, and whether it ran at the same time as the
// child of another holder.
//
//	child -log FILE [-grandchildren N] [-escape HOW] [-ignore-term] [-beat 20ms]
//
// Every process (the child and each grandchild it starts) appends records to
// FILE, one line each, with a single write on a descriptor opened with
// O_APPEND (so lines from different processes never interleave):
//
//	EVENT UNIXNANO PID ROLE IDENTITY TERM LEASEID
//
// EVENT is "begin" (first record), "beat" (every -beat, at most 50 ms, so
// that a process killed by SIGKILL, which writes no end, is known to have
// died within one beat of its last record) or "end" (it stops by itself, on
// SIGTERM, SIGINT or SIGHUP). UNIXNANO is CLOCK_REALTIME in nanoseconds: the
// trials compare records of processes on one machine only. ROLE is "child"
// or "grandchild"; IDENTITY, TERM and LEASEID are LEADERRUN_IDENTITY,
// LEADERRUN_TERM and LEADERRUN_LEASE_ID ("-" when unset).
//
// Grandchildren are started with this same program, stay in the child's
// process group (as a shell pipeline's members would) and have no
// parent-death signal of their own: only leaderrun may stop them. With
// -escape they leave the group: "setsid" (a session of their own),
// "timeout" (under timeout(1), which puts itself and them in a group of its
// own) or "double-fork" (through a middle process that starts them in a
// session of their own and exits at once: orphans). With -ignore-term, the
// child and its grandchildren ignore SIGTERM, so that only SIGKILL stops
// them.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// maxBeat is the longest heartbeat period allowed: the end of a killed
// process is only known to within one beat.
const maxBeat = 50 * time.Millisecond

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	logPath := fs.String("log", "", "append begin/beat/end records to this file (required)")
	grandchildren := fs.Int("grandchildren", 0, "start this many grandchildren in the same process group")
	ignoreTerm := fs.Bool("ignore-term", false, "ignore SIGTERM (the grandchildren too)")
	beat := fs.Duration("beat", 20*time.Millisecond, "heartbeat period, at most 50ms")
	role := fs.String("role", "child", "child or grandchild (set for the grandchildren); middle: a double fork's middle process")
	escape := fs.String("escape", "", "how the grandchildren leave the child's group: setsid, timeout or double-fork")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *logPath == "" || *beat <= 0 || *beat > maxBeat || *grandchildren < 0 || !escapes[*escape] {
		fmt.Fprintln(os.Stderr, "child: need -log FILE, 0 < -beat <= 50ms, -grandchildren >= 0, -escape setsid|timeout|double-fork")
		return 2
	}
	if *role == "middle" {
		// A double fork's middle: start the grandchild in a session of its
		// own, and exit without a record: it is orphaned at once.
		if err := startGrandchild(*logPath, *beat, *ignoreTerm, "setsid"); err != nil {
			fmt.Fprintln(os.Stderr, "child: start grandchild:", err)
			return 99
		}
		return 0
	}

	// Signals first: a SIGTERM that arrives while the grandchildren start
	// must be ignored or recorded, not kill the process unrecorded.
	stop := make(chan os.Signal, 1)
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
		signal.Notify(stop, syscall.SIGINT, syscall.SIGHUP)
	} else {
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	}

	f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 99
	}
	rec := recorder{f: f, tail: " " + strconv.Itoa(os.Getpid()) + " " + *role + " " +
		envOr("LEADERRUN_IDENTITY") + " " + envOr("LEADERRUN_TERM") + " " + envOr("LEADERRUN_LEASE_ID") + "\n"}
	if err := rec.write("begin"); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 99
	}

	for range *grandchildren {
		if err := startGrandchild(*logPath, *beat, *ignoreTerm, *escape); err != nil {
			fmt.Fprintln(os.Stderr, "child: start grandchild:", err)
			return 99
		}
	}

	tick := time.NewTicker(*beat)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			if err := rec.write("end"); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 99
			}
			return 0
		case <-tick.C:
			if err := rec.write("beat"); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 99
			}
		}
	}
}

// recorder writes one record per call, as one write(2).
type recorder struct {
	f    *os.File
	tail string // " PID ROLE IDENTITY TERM LEASEID\n"
}

func (r recorder) write(event string) error {
	_, err := r.f.WriteString(event + " " + strconv.FormatInt(time.Now().UnixNano(), 10) + r.tail)
	return err
}

func envOr(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return "-"
}

// escapes are -escape's values.
var escapes = map[string]bool{"": true, "setsid": true, "timeout": true, "double-fork": true}

// startGrandchild starts this program again as a grandchild, in the same
// process group unless escape says how it leaves it, and reaps it when it
// ends (a zombie would look alive to kill(pid, 0)).
func startGrandchild(logPath string, beat time.Duration, ignoreTerm bool, escape string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	role := "grandchild"
	if escape == "double-fork" {
		role = "middle"
	}
	args := []string{"-role", role, "-log", logPath, "-beat", beat.String()}
	if ignoreTerm {
		args = append(args, "-ignore-term")
	}
	cmd := exec.Command(self, args...)
	switch escape {
	case "setsid":
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	case "timeout":
		cmd = exec.Command("timeout", append([]string{"300", self}, args...)...)
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
