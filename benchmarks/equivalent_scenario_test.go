package benchmarks_test

import (
	"testing"

	"github.com/switchboard-http/switchboard/benchmarks/scenario"
)

// TestEquivalentScenarioStacks runs TestEquivalent's scripts through the
// scenario harness's stacks, to its smoke policy (full jitter under a 1ms
// cap, so the test barely sleeps): the retrying stacks must agree on
// attempts, outcomes and bodies there too. Left out, and why:
//   - bare never retries;
//   - switchboard-defaults and -breaker retry idempotent methods only (the
//     built-in retryable_methods), so the POST script gets one attempt
//     there; the scenarios send GET;
//   - the hedging stacks send extra copies by design.
func TestEquivalentScenarioStacks(t *testing.T) {
	o := scenario.Smoke()
	for _, name := range []string{
		scenario.NameSwitchboardDefaults, scenario.NameSwitchboardBreaker,
		scenario.NameFailsafe, scenario.NameRetryableHTTP, scenario.NameHeimdall,
	} {
		t.Run(name, func(t *testing.T) {
			for _, tt := range equivalenceCases {
				t.Run(tt.name, func(t *testing.T) {
					if tt.method == "POST" && (name == scenario.NameSwitchboardDefaults || name == scenario.NameSwitchboardBreaker) {
						t.Skip("switchboard's built-in retryable_methods leave POST out")
					}
					rt := &scriptRT{script: tt.script}
					stack, skip, err := scenario.NewStack(name, o, rt)
					if err != nil {
						t.Fatal(err)
					}
					if skip != "" {
						t.Skip(skip)
					}
					t.Cleanup(stack.Close)
					checkEquivalent(t, stack, rt, tt)
				})
			}
		})
	}
}
