//go:build unix

package runner

import (
	"os"
	"os/exec"
	"testing"
)

// BenchmarkStartTrue runs `true` under Start until its Result: the guard
// (here the test binary re-executed; leaderrun's own binary is larger and
// slower to start, see scripts/bench.sh), the command, the status pipe and
// the group's drain. BenchmarkExecTrue is the same command run by os/exec
// alone, the floor.
func BenchmarkStartTrue(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1) on PATH")
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { devnull.Close() })
	for b.Loop() {
		p, err := Start(Config{Argv: []string{path}, Stdin: devnull, Stdout: devnull, Stderr: devnull})
		if err != nil {
			b.Fatal(err)
		}
		if res := p.Result(); res.Code() != 0 {
			b.Fatalf("true: %+v", res)
		}
	}
}

func BenchmarkExecTrue(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1) on PATH")
	}
	for b.Loop() {
		if err := exec.Command(path).Run(); err != nil {
			b.Fatal(err)
		}
	}
}
