package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/exampletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestQuickstartSteps checks each printed step: what the server saw (the
// status of each attempt of the step's call) and what the client got, so
// that a step cannot claim what did not happen.
func TestQuickstartSteps(t *testing.T) {
	out := exampletest.Run(t, 30*time.Second, run)
	// The steps, split at their numbers ("1. ", "2. ", "3. " at a line start).
	starts := regexp.MustCompile(`(?m)^\d\. `).FindAllStringIndex(out, -1)
	if len(starts) != 3 {
		t.Fatalf("got %d steps, want 3:\n%s", len(starts), out)
	}
	steps := make([]string, 3)
	for i, s := range starts {
		end := len(out)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		steps[i] = out[s[0]:end]
	}
	tests := []struct {
		step  int
		wants []string
	}{
		{1, []string{
			"attempt 2 in", "attempt 3 in", // the retries, as the observer saw them
			"server saw 3 attempts of call-1: 503, 503, 200",
			`client got 200 OK "invoice 42: paid"`,
		}},
		{2, []string{
			"reloaded: generation 2, changed [billing] (same *http.Client: true)",
			"server saw 1 attempt of call-2: 503",
			`client got 503 Service Unavailable "busy"`,
		}},
		{3, []string{
			"rejected, generation 2 keeps serving",
			"clients.billing.retry.max_retires: unknown key (line 5); did you mean max_retries?",
			`clients.billing.retry.initial_backoff: must be a duration string like "500ms", got 500 (line 6)`,
			"server saw 1 attempt of call-3: 503",
			`client got 503 Service Unavailable "busy"`,
		}},
	}
	for _, tt := range tests {
		step := steps[tt.step-1]
		for _, want := range tt.wants {
			if !strings.Contains(step, want) {
				t.Errorf("step %d lacks %q:\n%s", tt.step, want, step)
			}
		}
	}
	if strings.Contains(steps[1], "attempt 2 in") || strings.Contains(steps[2], "attempt 2 in") {
		t.Errorf("a step without retries shows a retry:\n%s", out)
	}
}
