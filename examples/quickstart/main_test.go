package main

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/exampletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQuickstartRuns(t *testing.T) {
	out := exampletest.Run(t, 30*time.Second, run)
	for _, want := range []string{
		"; attempt 2 in",           // step 1 retried
		`200 OK "invoice 42: paid`, // and succeeded
		"reloaded: generation 2",   // step 2 applied
		"503 Service Unavailable",  // without retries the 503 comes back
		"did you mean max_retries", // step 3 rejected with a suggestion
		"generation 2 keeps serving",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
