package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Exit status, as the root command's help and README.md say.
const (
	exitOK          = 0
	exitExpectation = 1
	exitInput       = 2
	exitLab         = 3
	exitInterrupted = 130
)

// exitHelp is the exit status section of the root command's help.
const exitHelp = `Exit status:
  0    the run met the scenario's expectation; the files are valid
  1    a run (or a re-judged report) did not meet its expectation
  2    input error: a bad flag or argument, an unknown id, a scenario or
       case record refused by validate
  3    lab failure: a server did not start, or the run was inconclusive
       because the lab failed
  130  interrupted (Ctrl-C); the run's report is marked aborted`

// errExpectation is returned when a run completed but did not meet the
// scenario's expectation: exit status 1, the report says why.
var errExpectation = errors.New("the run did not meet the scenario's expectation")

// errAborted is returned when a run was interrupted: exit status 130, as
// for a command stopped by Ctrl-C.
var errAborted = errors.New("the run was interrupted; its report is marked aborted")

// errLabFailed is returned when a run's verdict is inconclusive because the
// lab itself failed: exit status 3.
var errLabFailed = errors.New("the lab failed; the run is inconclusive (its report says why)")

// inputError is a mistake in what the user gave: flags, arguments, ids,
// scenario files, case records (exit status 2).
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// errInput marks err as an input error (nil stays nil).
func errInput(err error) error {
	if err == nil {
		return nil
	}
	return inputError{err}
}

func exitCode(err error) int {
	var in inputError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errAborted):
		return exitInterrupted
	case errors.As(err, &in):
		return exitInput
	case errors.Is(err, errExpectation):
		return exitExpectation
	}
	return exitLab
}

// trackRuns wraps every command's RunE to note that it ran: an error that
// comes before any command ran is cobra's (an unknown command or flag, a
// wrong number of arguments), an input error.
func trackRuns(c *cobra.Command, ran *bool) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			*ran = true
			return run(cmd, args)
		}
	}
	if run := c.Run; run != nil {
		c.Run = func(cmd *cobra.Command, args []string) {
			*ran = true
			run(cmd, args)
		}
	}
	for _, sub := range c.Commands() {
		trackRuns(sub, ran)
	}
}
