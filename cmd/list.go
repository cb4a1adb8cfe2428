package cmd

// `leaderrun list`: every lease of the container from one paged listing.

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
)

func newListCmd(a *app) *cobra.Command {
	o := &readOptions{}
	c := &cobra.Command{
		Use:   "list [-o text|json]",
		Short: "List every lease of the container with its state, holder and last run",
		Long: `list lists the container's blobs once (one request per 5,000 blobs, lease
state and metadata included) and prints one row per lease: state, holder,
term, since when it is held, the last run that is over, and notes (a pause in
force, hosts done). A lease of several slots gets a summary row and one row
per slot; its slot and marker blobs are not listed as leases of their own.
Ages are by the storage service's clock (the listing's Date).

-o json prints an array of the objects that status -o json prints, each with
"lease", its name. Exit status 0, or 69 when the storage cannot be read.`,
		Example: `  leaderrun list
  leaderrun list --container jobs -o json | jq -r '.[] | select(.state == "leased") | .lease'`,
		Args: unexpectedArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := envDefaults(c.Flags(), locationEnv); err != nil {
				return err
			}
			if err := checkOutput(o.output); err != nil {
				return err
			}
			return runList(c.Context(), a, o)
		},
	}
	o.loc.addContainerFlags(c.Flags())
	addOutputFlag(c.Flags(), &o.output)
	return c
}

func addOutputFlag(fs *pflag.FlagSet, output *string) {
	fs.StringVarP(output, "output", "o", "text", "output format: text or json")
}

func checkOutput(output string) error {
	if output != "text" && output != "json" {
		return exit.Usagef("invalid --output %q: use text or json", output)
	}
	return nil
}

func runList(ctx context.Context, a *app, o *readOptions) error {
	rctx, cancel := context.WithTimeout(ctx, operatorTimeout)
	defer cancel()
	client, err := lease.NewContainer(o.loc.clientConfig("", a.log))
	if err != nil {
		return leader.StorageExit(err)
	}
	leases, err := client.Views(rctx)
	if err != nil {
		return exit.With(exit.Unavailable, fmt.Errorf("cannot list container %q: %w", o.loc.container, err))
	}
	if o.output == "json" {
		return writeJSON(a.stdout, listJSON(leases))
	}
	return writeListText(a.stdout, leases)
}
