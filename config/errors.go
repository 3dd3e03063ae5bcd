package config

import (
	"errors"
	"strconv"
	"strings"
)

// FieldError is one problem with one configuration key. Load and Validate
// return every FieldError of a configuration together, joined with
// errors.Join; FieldErrors takes them apart again.
//
// Error() reads "clients.billing.retry.max_retries: must be >= 0, got -1",
// followed by " (line 12)" when the value came from the file and its line is
// known, or " (set by env SWITCHBOARD_…)" when an env variable or flag set it,
// and by "; did you mean max_retries?" when Hint is set. An error about a
// value a Source set leads with the Source instead:
// "source etcd: clients.billing.retry.max_retries: must be >= 0, got -1".
// When Input is set (an env variable or flag whose text could not be used
// at all) Error() leads with Input instead of Path:
// `env SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES: must be an integer, got "abc"`.
//
// A FieldError never holds the value of a secret key (auth.bearer_token,
// auth.basic.password): such values are shown as "<redacted>".
// The zero value is an error with an empty message. A FieldError is not
// changed after it is returned, so it is safe for concurrent reads.
type FieldError struct {
	// Path is the full key path, such as "clients.billing.retry.max_retries"
	// or "defaults.timeout". It is never empty in errors from this package.
	Path string
	// Line is the 1-based line in the YAML file; 0 when unknown or when the
	// value did not come from the file.
	Line int
	// Msg says what is wrong, such as "must be >= 0, got -1".
	Msg string
	// Hint is the nearest valid key for an unknown one ("max_retries");
	// empty when there is no close match.
	Hint string
	// Input names the env variable or flag whose text could not be used, as
	// "env NAME", "--set key" or "--flag.name"; empty otherwise.
	Input string
	// SetBy names the env variable, flag or Source ("source consul") that
	// set the offending value when it did not come from the file or the
	// built-in defaults; empty otherwise.
	SetBy string

	// about lists other full key paths the error is about (timeout for
	// "attempt_timeout must be less than timeout"): when the value at Path
	// was set by no layer, Load places the error by the first of them that
	// was.
	about []string
}

// Error returns the message described on FieldError.
func (e *FieldError) Error() string {
	var b strings.Builder
	fromSource := strings.HasPrefix(e.SetBy, "source ")
	switch {
	case e.Input != "":
		b.WriteString(e.Input)
	case fromSource && e.Line == 0:
		b.WriteString(e.SetBy)
		b.WriteString(": ")
		b.WriteString(e.Path)
	default:
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	switch {
	case e.Line > 0:
		b.WriteString(" (line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(")")
	case e.SetBy != "" && e.Input == "" && !fromSource:
		b.WriteString(" (set by ")
		b.WriteString(e.SetBy)
		b.WriteString(")")
	}
	if e.Hint != "" {
		b.WriteString("; did you mean ")
		b.WriteString(e.Hint)
		b.WriteString("?")
	}
	return b.String()
}

// FieldErrors returns every *FieldError in err's tree, following both
// Unwrap() error and Unwrap() []error (errors.Join), in tree order. It
// returns nil for a nil err or a tree without FieldErrors. It is safe for
// concurrent use.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if fe, ok := err.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// joinFieldErrors joins errs (nil when there are none) for returning.
func joinFieldErrors(errs []*FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	es := make([]error, len(errs))
	for i, e := range errs {
		es[i] = e
	}
	return errors.Join(es...)
}
