package cmd

import (
	"io"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/exit"
)

// logOptions configure leaderrun's own log, which goes to stderr; COMMAND's
// output is never touched.
type logOptions struct {
	level  string
	format string
	quiet  bool
}

func addLogFlags(fs *pflag.FlagSet, o *logOptions) {
	fs.StringVar(&o.level, "log-level", "info", "leaderrun's log level: trace, debug, info, warn, error (env LEADERRUN_LOG_LEVEL)")
	fs.StringVar(&o.format, "log-format", "text", "leaderrun's log format: text or json")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "log errors only")
}

func (a *app) setupLog(c *cobra.Command) error {
	if err := envDefaults(c.Flags(), map[string]string{"log-level": "LEADERRUN_LOG_LEVEL"}); err != nil {
		return err
	}
	o := a.logOpts
	if hclog.LevelFromString(o.level) == hclog.NoLevel {
		return exit.Usagef("invalid --log-level %q: use trace, debug, info, warn or error", o.level)
	}
	if o.format != "text" && o.format != "json" {
		return exit.Usagef("invalid --log-format %q: use text or json", o.format)
	}
	if o.quiet {
		o.level = "error"
	}
	a.log = newLogger(a.stderr, o)
	return nil
}

func newLogger(w io.Writer, o logOptions) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "leaderrun",
		Level:      hclog.LevelFromString(o.level),
		Output:     w,
		JSONFormat: o.format == "json",
		TimeFormat: "2006-01-02T15:04:05.000Z07:00",
	})
}
