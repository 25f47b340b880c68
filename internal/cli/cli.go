// Package cli gives every command the same conventions: each flag has an
// environment-variable equivalent (PREFIX_FLAG_NAME, upper case, dashes to
// underscores), a command-line value wins over the environment, --help
// lists both, and the exit code says whether the work or the command line
// failed (ExitCode).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// EnvPrefix is prepended to every environment variable name.
const EnvPrefix = "MIMLSTREAM"

// EnvName returns the environment variable that sets the named flag.
func EnvName(cmd, flagName string) string {
	n := strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
	if cmd != "" {
		return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(cmd, "-", "_")) + "_" + n
	}
	return EnvPrefix + "_" + n
}

// NewFlagSet returns a flag set whose usage text lists the environment
// variable of each flag. cmd names the command in the variables (empty for
// variables shared by all commands is not supported: names must be unique).
func NewFlagSet(cmd, synopsis string, out io.Writer) *flag.FlagSet {
	return NewFlagSetEnv(cmd, synopsis, out, func(f string) string { return EnvName(cmd, f) })
}

// EnvNames returns the environment variable of a flag, for a flag set
// whose flags do not all take the flag set's prefix: a subcommand's own
// flags beside those it shares with its siblings (`mimlctl models
// promote --force` is MIMLSTREAM_MIMLCTL_MODELS_PROMOTE_FORCE, its --redis
// MIMLSTREAM_MIMLCTL_MODELS_REDIS, as every action's).
type EnvNames func(flagName string) string

// NewFlagSetEnv is NewFlagSet with the variables named by env; parse it
// with ParseEnv and the same env.
func NewFlagSetEnv(cmd, synopsis string, out io.Writer, env EnvNames) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "%s\n\nFlags (each also settable by the environment variable shown):\n", synopsis)
		fs.VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(out, "  --%s", f.Name)
			if name != "" {
				fmt.Fprintf(out, " %s", name)
			}
			fmt.Fprintf(out, "\n    \t%s", strings.ReplaceAll(usage, "\n", "\n    \t"))
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
				fmt.Fprintf(out, " (default %q)", f.DefValue)
			}
			fmt.Fprintf(out, "\n    \t[$%s]\n", env(f.Name))
		})
	}
	return fs
}

// Parse parses args, then fills every flag not given on the command line from
// its environment variable. It returns flag.ErrHelp for -h/--help, after
// printing usage, so callers can exit 0; any other error is a usage error
// (ErrUsage), a bad value in the environment included.
func Parse(fs *flag.FlagSet, args []string) error {
	return ParseEnv(fs, args, func(f string) string { return EnvName(fs.Name(), f) })
}

// ParseEnv is Parse for a flag set made by NewFlagSetEnv with env.
func ParseEnv(fs *flag.FlagSet, args []string, env EnvNames) error {
	return Usage(parse(fs, args, env, os.LookupEnv))
}

func parse(fs *flag.FlagSet, args []string, envName EnvNames, lookup func(string) (string, bool)) error {
	if err := ParseArgs(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		env := envName(f.Name)
		if v, ok := lookup(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("$%s=%q: %w", env, v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// ParseArgs parses the command line only (no environment): -h/--help
// prints the usage and returns flag.ErrHelp; a bad flag or value prints
// nothing and returns one line, the error and a hint, for ExitCode to
// print, instead of the flag package's error followed by the whole help.
func ParseArgs(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	case err != nil:
		return fmt.Errorf("%w (--help lists the flags)", err)
	}
	return nil
}

// StringList is a repeatable string flag; from the environment it takes a
// comma-separated list.
type StringList []string

func (s *StringList) String() string { return strings.Join(*s, ",") }

// Set appends a value (or several, comma-separated).
func (s *StringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}
