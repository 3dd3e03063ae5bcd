// Package exampletest runs the programs under examples/ in their tests, so
// that none of them can rot: each example's main calls run(io.Writer) error,
// and its test hands that function to Run.
package exampletest

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// Run calls run with a buffer, fails t if it returns an error or does not
// finish within limit, and returns what it wrote. It is safe for concurrent
// use by tests that each pass their own run.
func Run(t testing.TB, limit time.Duration, run func(io.Writer) error) string {
	t.Helper()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(&out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
	case <-time.After(limit):
		t.Fatalf("run: did not finish within %v", limit)
	}
	return out.String()
}

// Contains fails t, without stopping it, for each of wants that out does
// not contain, showing out once per miss: the check every example's test
// makes of what its program printed.
func Contains(t testing.TB, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
