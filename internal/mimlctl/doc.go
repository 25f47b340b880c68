// Package mimlctl holds the operator's commands of mimlctl, but for the
// development broker (cmd/mimlctl, which alone may link the embedded
// broker):
//
//	tail TOPIC     annotations and dead letters, readable or as JSON lines
//	models ACTION  list, show, promote (guarded), rollback, export, import
//	status         the status page (package status)
//
// Each takes the same connection flags as the services (service.Kafka,
// redisflag.Config), with environment equivalents, and returns an error
// whose cli.ExitCode is the command's exit code.
package mimlctl

import (
	"encoding/json"
	"flag"
	"io"

	"github.com/mimlstream/mimlstream/internal/cli"
)

// parseArgs parses flags that may come before, between or after the
// positional arguments (`models promote v3 --force`), then fills unset
// flags from the environment (variables named by env; nil: the flag
// set's prefix). It returns the positional arguments.
func parseArgs(fs *flag.FlagSet, args []string, env cli.EnvNames) ([]string, error) {
	var pos []string
	for {
		if err := cli.ParseArgs(fs, args); err != nil {
			return nil, cli.Usage(err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if env == nil {
		env = func(f string) string { return cli.EnvName(fs.Name(), f) }
	}
	if err := cli.ParseEnv(fs, nil, env); err != nil {
		return nil, err
	}
	return pos, nil
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
