package cmd

// Where the lease blob lives, its client, and the completion of lease names
// for -l from one listing of the container.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
)

// locationOptions say where the lease blob lives. Credentials come from the
// environment only, never from flags, because flags show up in ps.
type locationOptions struct {
	lease     string
	container string
	account   string
	endpoint  string
}

func (o *locationOptions) addFlags(fs *pflag.FlagSet) {
	inGroup(fs, groupLease, func(fs *pflag.FlagSet) {
		fs.StringVarP(&o.lease, "lease", "l", "", "the lease `NAME`: the blob's name, which may contain '/' (required)")
	})
	o.addContainerFlags(fs)
}

// addContainerFlags adds the container's flags (list needs no lease name).
func (o *locationOptions) addContainerFlags(fs *pflag.FlagSet) {
	inGroup(fs, groupStorage, func(fs *pflag.FlagSet) {
		fs.StringVar(&o.container, "container", "leaderrun", "the container `NAME`, created if missing")
		fs.StringVar(&o.account, "account", "", "the storage account `NAME`")
		fs.StringVar(&o.endpoint, "endpoint", "", "the blob service `URL`, for the emulator, sovereign clouds and private endpoints (default https://ACCOUNT.blob.core.windows.net)")
	})
}

func (o *locationOptions) complete(fs *pflag.FlagSet) error {
	if err := envDefaults(fs); err != nil {
		return err
	}
	if o.lease == "" && leader.SetByLeaderrun("LEADERRUN_LEASE") {
		return exit.Usagef("missing lease name: use -l NAME (LEADERRUN_LEASE=%s was set by the leaderrun this one runs under)",
			exit.Quote(os.Getenv("LEADERRUN_LEASE")))
	}
	if o.lease == "" {
		return exit.Usagef("missing lease name: use -l NAME or LEADERRUN_LEASE")
	}
	return checkLeaseNameLength(o.lease)
}

// azureBlobNameMax is the longest blob name Azure accepts.
const azureBlobNameMax = 1024

// maxLeaseName is the longest lease name as typed: the lease's other blobs
// (NAME~slot-49, NAME~pause, NAME~trigger, NAME~deputy) add to it, and
// must stay within Azure's limit.
var maxLeaseName = azureBlobNameMax - max(len(lease.SlotBlob("", lease.MaxSlots-1)), len(lease.PauseBlob("")), len(lease.TriggerBlob("")),
	len(lease.DeputyBlob("")))

// checkLeaseNameLength refuses a name longer than maxLeaseName, counting
// the name as typed; the rest of the naming rules are the lease package's.
func checkLeaseNameLength(name string) error {
	if len(name) > maxLeaseName {
		return exit.Usagef("invalid lease name %s: a lease name may have at most %d characters (leaderrun adds up to %d for the lease's other blobs, within Azure's %d)",
			exit.Quote(name), maxLeaseName, azureBlobNameMax-maxLeaseName, azureBlobNameMax)
	}
	return nil
}

// checkDoneMarkerLength refuses, for --once-per-host, a lease name and a
// host name that together make a done marker longer than Azure accepts.
func checkDoneMarkerLength(name, host string) error {
	if len(lease.DoneBlob(name, host)) > azureBlobNameMax {
		return exit.Usagef("lease name %s and host %s are too long for --once-per-host: together they may have at most %d characters",
			exit.Quote(name), exit.Quote(host), azureBlobNameMax-len(lease.DoneBlob("", "")))
	}
	return nil
}

// client addresses the lease blob (lease.NewLeaseBlob); a configuration it
// cannot accept is a usage error (64).
func (o *locationOptions) client(log hclog.Logger) (*lease.Blob, error) {
	c, err := lease.NewLeaseBlob(o.clientConfig(o.lease, log))
	if err != nil {
		return nil, leader.StorageExit(err)
	}
	return c, nil
}

// clientConfig is the storage client's configuration for blob ("": the
// container), credentials from the environment.
func (o *locationOptions) clientConfig(blob string, log hclog.Logger) lease.ClientConfig {
	return lease.ClientConfig{
		Container:        o.container,
		Blob:             blob,
		Account:          o.account,
		Endpoint:         o.endpoint,
		ConnectionString: os.Getenv("AZURE_STORAGE_CONNECTION_STRING"),
		AccountKey:       os.Getenv("AZURE_STORAGE_KEY"),
		SASToken:         os.Getenv("AZURE_STORAGE_SAS_TOKEN"),
		Logger:           log,
	}
}

// view reads the lease (lease.View: one listing of its slots and markers).
// Storage that cannot be read is exit 69.
func (o *locationOptions) view(ctx context.Context, log hclog.Logger) (*lease.Blob, *lease.View, error) {
	client, err := o.client(log)
	if err != nil {
		return nil, nil, err
	}
	v, err := client.View(ctx)
	if err != nil {
		return nil, nil, exit.With(exit.Unavailable, fmt.Errorf("cannot read lease %s: %w", exit.Quote(o.lease), err))
	}
	return client, v, nil
}

// operatorTimeout bounds what status and break do: one or two requests.
const operatorTimeout = 30 * time.Second

// completionTimeout bounds the listing behind a completion: a shell must
// not hang on a slow or unreachable storage.
const completionTimeout = 2 * time.Second

// completeLeaseNames registers the completion of -l on root and on each of
// its commands that has it.
func completeLeaseNames(root *cobra.Command) {
	for _, c := range append([]*cobra.Command{root}, root.Commands()...) {
		if c.Flags().Lookup("lease") != nil {
			_ = c.RegisterFlagCompletionFunc("lease", leaseNameCompletion)
		}
	}
}

// leaseNameCompletion lists the lease names that begin with toComplete, in
// the container the command line (or the environment) names. Any failure
// (no credentials, storage unreachable, the timeout) completes nothing.
func leaseNameCompletion(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var o locationOptions
	fs := c.Flags()
	_ = envDefaults(fs) // a bad variable leaves its flag as it is
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
