// Command man writes leaderrun's man pages, generated from its command tree,
// into a directory: go run ./scripts/man [-version V] DIR. scripts/release.sh
// runs it; it is not part of the leaderrun binary.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/cobra/doc"

	"github.com/leaderrun/leaderrun/cmd"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("man", flag.ContinueOnError)
	version := fs.String("version", "", "the version in the pages' footer (default: leaderrun's own)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/man [-version V] DIR")
		return 2
	}
	if err := write(fs.Arg(0), *version); err != nil {
		fmt.Fprintln(os.Stderr, "man:", err)
		return 1
	}
	return 0
}

// write generates one page per command into dir.
func write(dir, version string) error {
	if version == "" {
		version = cmd.Version()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	header := &doc.GenManHeader{Section: "1", Source: "leaderrun " + version}
	return doc.GenManTree(cmd.Command(), header, dir)
}
