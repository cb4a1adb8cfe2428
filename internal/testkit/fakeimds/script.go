package fakeimds

// The testscript command: fake metadata services inside the test process,
// driven from a script under testdata/script.

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// ScriptUsage is the help for ScriptCmd.
const ScriptUsage = `fakeimds start NAME VM            start a fake for the VM named VM; $NAME is its URL
fakeimds preempt NAME VM NOTICE   add a Preempt of VM, NotBefore now+NOTICE (e.g. 30s)
fakeimds event NAME TYPE VM NOTICE [STATUS]
                                  add an event (Freeze, Reboot, …; STATUS Scheduled by default;
                                  a NOTICE of "-" sends an empty NotBefore)
fakeimds clear NAME               remove every event
fakeimds fail NAME STATUS         answer every request with STATUS (0: answer normally)
fakeimds delay NAME DURATION      hold every request for DURATION (0: answer at once)
fakeimds stop NAME                close it (connections refused from now on)
fakeimds posted NAME              succeed if it has received a POST (use ! to assert none)
fakeimds counts NAME              print the request counts to stdout`

var scripts sync.Map // *testscript.TestScript → *scriptServers

type scriptServers struct {
	mu sync.Mutex
	m  map[string]*Server
}

// ScriptCmd is a testscript command, registered as "fakeimds" in
// testscript.Params.Cmds, that runs fake metadata services in the test
// process for the script (see ScriptUsage). Every server the script starts
// is closed when the script ends.
func ScriptCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage:\n%s", ScriptUsage)
	}
	verb, name, rest := args[0], args[1], args[2:]
	if verb != "posted" && neg {
		ts.Fatalf("unsupported: ! fakeimds %s", verb)
	}
	if verb == "start" {
		if len(rest) != 1 {
			ts.Fatalf("usage: fakeimds start NAME VM")
		}
		startServer(ts, name, rest[0])
		return
	}
	s := lookup(ts, name)
	switch verb {
	case "preempt":
		if len(rest) != 2 {
			ts.Fatalf("usage: fakeimds preempt NAME VM NOTICE")
		}
		id := s.AddPreempt(rest[0], notBefore(ts, rest[1]))
		fmt.Fprintln(ts.Stdout(), id)
	case "event":
		if len(rest) != 3 && len(rest) != 4 {
			ts.Fatalf("usage: fakeimds event NAME TYPE VM NOTICE [STATUS]")
		}
		e := Event{Type: rest[0], Resources: []string{rest[1]}}
		if rest[2] != "-" {
			e.NotBefore = notBefore(ts, rest[2])
		}
		if len(rest) == 4 {
			e.Status = rest[3]
		}
		fmt.Fprintln(ts.Stdout(), s.AddEvent(e))
	case "clear":
		s.Clear()
	case "fail":
		code, err := strconv.Atoi(oneArg(ts, verb, rest))
		ts.Check(err)
		s.SetFailure(code)
	case "delay":
		d, err := time.ParseDuration(oneArg(ts, verb, rest))
		ts.Check(err)
		s.SetDelay(d)
	case "stop":
		ts.Check(s.Close())
	case "posted":
		if posted := s.Posted(); posted == neg {
			ts.Fatalf("fakeimds %s: POST received: %v", name, posted)
		}
	case "counts":
		c := s.Counts()
		fmt.Fprintf(ts.Stdout(), "names=%d events=%d posts=%d noheader=%d other=%d\n",
			c.Names, c.Events, c.Posts, c.NoHeader, c.Other)
	default:
		ts.Fatalf("fakeimds: unknown verb %q\n%s", verb, ScriptUsage)
	}
}

func startServer(ts *testscript.TestScript, name, vm string) {
	v, loaded := scripts.LoadOrStore(ts, &scriptServers{m: map[string]*Server{}})
	ss := v.(*scriptServers)
	if !loaded {
		ts.Defer(func() {
			ss.mu.Lock()
			defer ss.mu.Unlock()
			for _, s := range ss.m {
				_ = s.Close()
			}
			scripts.Delete(ts)
		})
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, ok := ss.m[name]; ok {
		ts.Fatalf("fakeimds %s: already started", name)
	}
	s, err := New(vm)
	ts.Check(err)
	ss.m[name] = s
	ts.Setenv(name, s.URL())
}

func lookup(ts *testscript.TestScript, name string) *Server {
	if v, ok := scripts.Load(ts); ok {
		ss := v.(*scriptServers)
		ss.mu.Lock()
		defer ss.mu.Unlock()
		if s, ok := ss.m[name]; ok {
			return s
		}
	}
	ts.Fatalf("fakeimds %s: not started", name)
	return nil
}

func oneArg(ts *testscript.TestScript, verb string, rest []string) string {
	if len(rest) != 1 {
		ts.Fatalf("usage: fakeimds %s NAME VALUE", verb)
	}
	return rest[0]
}

func notBefore(ts *testscript.TestScript, notice string) time.Time {
	d, err := time.ParseDuration(notice)
	ts.Check(err)
	return time.Now().Add(d)
}
