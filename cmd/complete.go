package cmd

// Shell completion of lease names for -l, from one listing of the
// container.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/leaderrun/leaderrun/lease"
)

// completionTimeout bounds the listing behind a completion: a shell must
// not hang on a slow or unreachable storage.
const completionTimeout = 2 * time.Second

// completeLeaseNames registers the completion of -l on every command of
// root's tree that has it.
func completeLeaseNames(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("lease") != nil {
			_ = c.RegisterFlagCompletionFunc("lease", leaseNameCompletion)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// leaseNameCompletion lists the lease names of the container that the
// command line (or the environment) names, that begin with toComplete.
// Any failure (no credentials, storage unreachable, the timeout) completes
// nothing, silently.
func leaseNameCompletion(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var o locationOptions
	fs := c.Flags()
	_ = envDefaults(fs, locationEnv) // a bad variable leaves its flag as it is
	o.container, _ = fs.GetString("container")
	o.account, _ = fs.GetString("account")
	o.endpoint, _ = fs.GetString("endpoint")
	client, err := lease.NewContainer(o.clientConfig("", hclog.NewNullLogger()))
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	list := func(ctx context.Context) ([]lease.Listed, time.Time, error) { return client.List(ctx, toComplete) }
	if toComplete == "" {
		list = client.ListLeases // not through the helper blobs
	}
	listed, _, err := list(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, l := range listed {
		n := lease.ParseBlobName(l.Name).Lease
		if strings.HasPrefix(n, toComplete) && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
