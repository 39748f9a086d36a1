package server

import "fmt"

// OptionsError is a server that cannot be built as asked: options that
// contradict each other or the config. The caller's input is wrong, not
// the machine.
type OptionsError struct{ Err error }

func (e *OptionsError) Error() string { return e.Err.Error() }
func (e *OptionsError) Unwrap() error { return e.Err }

// usagef is an *OptionsError with a formatted message.
func usagef(format string, args ...any) error {
	return &OptionsError{Err: fmt.Errorf(format, args...)}
}
