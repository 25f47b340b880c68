package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// The exit codes of every command:
//
//	0  success, and after --help
//	1  the work failed (a broker or Redis that stays unreachable past the
//	   start-up, a listener that cannot bind, a consumer loop that fails,
//	   an unreadable dataset)
//	2  the command line is wrong (an unknown flag or command, a missing or
//	   malformed value); nothing was started
//
// A service stopped by SIGTERM or SIGINT drains and exits 0.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// ErrUsage marks an error in the command line rather than in the work.
// Test for it with errors.Is; create such errors with Usage or Usagef.
var ErrUsage = errors.New("usage error")

// usageError is an error of the command line. Its message is the wrapped
// error's alone, so marking an error does not change what is printed.
type usageError struct{ err error }

func (e usageError) Error() string   { return e.err.Error() }
func (e usageError) Unwrap() []error { return []error{e.err, ErrUsage} }

// Usage marks err as a command-line error (nil stays nil, and flag.ErrHelp
// is returned as is: help is not an error).
func Usage(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.Is(err, ErrUsage) {
		return err
	}
	return usageError{err}
}

// Usagef returns a command-line error with a formatted message.
func Usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// ExitCode turns what a command's work returned into its process exit
// code (see ExitOK, ExitFailure, ExitUsage) and prints a failure on stderr
// after the command's name. The mains are os.Exit(ExitCode(...)), so their
// tests check the exit code without a subprocess.
func ExitCode(command string, stderr io.Writer, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", command, err)
	if errors.Is(err, ErrUsage) {
		return ExitUsage
	}
	return ExitFailure
}
