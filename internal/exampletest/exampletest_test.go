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
