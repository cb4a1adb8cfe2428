//go:build unix

package runner

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkStartTrue runs `true` under Start until its Result: the guard
// (here the test binary re-executed; leaderrun's own binary is larger and
// slower to start, see scripts/bench.sh), the command, the status pipe and
// the group's drain. BenchmarkPrepareLaunchTrue is the same through Prepare
// and Launch. BenchmarkLaunchTrue times only Launch to Result, once the
// prepared guard waits for the go-ahead: what is left on the critical path
// when the guard is prepared while the lease is being acquired.
// BenchmarkExecTrue is the same command run by os/exec alone, the floor.
func BenchmarkStartTrue(b *testing.B) {
	cfg := benchTrue(b)
	for b.Loop() {
		p, err := Start(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if res := p.Result(); res.Code() != 0 {
			b.Fatalf("true: %+v", res)
		}
	}
}

func BenchmarkPrepareLaunchTrue(b *testing.B) {
	cfg := benchTrue(b)
	for b.Loop() {
		prep, err := Prepare(cfg)
		if err != nil {
			b.Fatal(err)
		}
		p, err := prep.Launch(nil)
		if err != nil {
			b.Fatal(err)
		}
		if res := p.Result(); res.Code() != 0 {
			b.Fatalf("true: %+v", res)
		}
	}
}

func BenchmarkLaunchTrue(b *testing.B) {
	cfg := benchTrue(b)
	for b.Loop() {
		b.StopTimer()
		prep, err := Prepare(cfg)
		if err != nil {
			b.Fatal(err)
		}
		waitAwaitingLaunch(b, prep.proc.pgid)
		b.StartTimer()
		p, err := prep.Launch(nil)
		if err != nil {
			b.Fatal(err)
		}
		if res := p.Result(); res.Code() != 0 {
			b.Fatalf("true: %+v", res)
		}
	}
}

// benchTrue is the Config that runs true(1) with /dev/null for input and
// output.
func benchTrue(b *testing.B) Config {
	b.Helper()
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1) on PATH")
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { devnull.Close() })
	return Config{Argv: []string{path}, Stdin: devnull, Stdout: devnull, Stderr: devnull}
}

func BenchmarkExecTrue(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1) on PATH")
	}
	for b.Loop() {
		if err := runOwn(exec.Command(path)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOutput is what keeping COMMAND's output costs its writes: 32 KiB
// writes to COMMAND's end of the pipe, passed on to /dev/null and the last
// 64 KiB kept (kept), against the same writes to /dev/null (direct).
func BenchmarkOutput(b *testing.B) {
	chunk := make([]byte, 32<<10)
	for _, name := range []string{"direct", "kept"} {
		b.Run(name, func(b *testing.B) {
			null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer null.Close()
			w := null
			var o *Output
			if name == "kept" {
				if o, err = KeepOutput(64<<10, null, null); err != nil {
					b.Fatal(err)
				}
				w = o.Stdout()
			}
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				if _, err := w.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			if o != nil {
				o.Close(time.Minute)
			}
		})
	}
}
