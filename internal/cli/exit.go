package service

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// ExitCode turns what a command's work returned into its process exit
// code: 0 on success and after --help (flag.ErrHelp), else 1 with the error
// on stderr after the command's name. The mains are os.Exit(ExitCode(...)),
// so their tests can check the exit code without a subprocess.
func ExitCode(command string, stderr io.Writer, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", command, err)
	return 1
}
