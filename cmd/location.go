package cmd

import (
	"context"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
)

// locationOptions say where the lease blob lives; run, status and break share
// them. Credentials are read from the environment only, never from flags,
// because flags show up in ps.
type locationOptions struct {
	lease     string
	container string
	account   string
	endpoint  string
}

func (o *locationOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.lease, "lease", "l", "", "lease name: the blob's name, may contain '/' (env LEADERRUN_LEASE; required)")
	o.addContainerFlags(fs)
}

// addContainerFlags adds the flags that say where the container is (list
// needs no lease name).
func (o *locationOptions) addContainerFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.container, "container", "leaderrun", "container of the lease blob, created if missing (env LEADERRUN_CONTAINER)")
	fs.StringVar(&o.account, "account", "", "storage account name (env AZURE_STORAGE_ACCOUNT)")
	fs.StringVar(&o.endpoint, "endpoint", "", "blob service URL (env LEADERRUN_ENDPOINT; default https://ACCOUNT.blob.core.windows.net)")
}

var locationEnv = map[string]string{
	"lease":     "LEADERRUN_LEASE",
	"container": "LEADERRUN_CONTAINER",
	"account":   "AZURE_STORAGE_ACCOUNT",
	"endpoint":  "LEADERRUN_ENDPOINT",
}

func (o *locationOptions) complete(fs *pflag.FlagSet) error {
	if err := envDefaults(fs, locationEnv); err != nil {
		return err
	}
	if o.lease == "" {
		return exit.Usagef("missing lease name: use -l NAME or LEADERRUN_LEASE")
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

// clientConfig is the storage client's configuration for blob ("" for the
// container as a whole), credentials from the environment.
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

// operatorTimeout bounds what status and break do: one or two requests.
const operatorTimeout = 30 * time.Second

func operatorContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, operatorTimeout)
}
