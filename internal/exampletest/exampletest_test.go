package exampletest_test

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/exampletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunReturnsOutput(t *testing.T) {
	got := exampletest.Run(t, time.Minute, func(w io.Writer) error {
		fmt.Fprint(w, "hello")
		return nil
	})
	if got != "hello" {
		t.Fatalf("got %q, want %q", got, "hello")
	}
}

// fatalRecorder notes Fatalf instead of stopping the goroutine for real.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
}

func TestRunFailsOnError(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	exampletest.Run(rec, time.Minute, func(w io.Writer) error {
		fmt.Fprint(w, "partial")
		return errors.New("boom")
	})
	if rec.msg != "run: boom\npartial" {
		t.Fatalf("Fatalf message: got %q, want the error and the output", rec.msg)
	}
}

// errorRecorder counts Errorf instead of failing the test.
type errorRecorder struct {
	testing.TB
	errs []string
}

func (e *errorRecorder) Helper() {}
func (e *errorRecorder) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

func TestContainsReportsEachMissingLine(t *testing.T) {
	rec := &errorRecorder{TB: t}
	exampletest.Contains(rec, "reloaded: generation 2\nfailed: 0\n", "failed: 0", "generation 3", "serving from: failover")
	if len(rec.errs) != 2 {
		t.Fatalf("got %d errors %q, want 2 (one per missing line)", len(rec.errs), rec.errs)
	}
	exampletest.Contains(rec, "all here", "all", "here")
	if len(rec.errs) != 2 {
		t.Errorf("got %d errors after a full match, want still 2", len(rec.errs))
	}
}
