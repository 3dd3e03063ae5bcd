package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQuickstartRuns(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"; attempt 2 in",           // step 1 retried
		`200 OK "invoice 42: paid`, // and succeeded
		"reloaded: generation 2",   // step 2 applied
		"503 Service Unavailable",  // without retries the 503 comes back
		"did you mean max_retries", // step 3 rejected with a suggestion
		"generation 2 keeps serving",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
