// Command leaderrun runs a command only while this host holds leadership,
// where leadership is a lease on an Azure Storage blob.
package main

import (
	"os"

	"github.com/leaderrun/leaderrun/cmd"
)

func main() { os.Exit(cmd.Execute()) }
