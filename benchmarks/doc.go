// Package benchmarks measures switchboard side by side with its peers:
// failsafe-go (failsafehttp, retry + circuit breaker), hashicorp's
// go-retryablehttp, gojek's heimdall, a minimal hand-written retry loop inside
// sony/gobreaker, and a bare *http.Client, each configured to one policy (see
// policy.go) and run over the same in-memory and loopback transports.
//
// It is a module of its own so that the competitors never enter the main
// go.mod. Its tests are not run by `go test ./...` at the repository root:
//
//	cd benchmarks
//	go test -run Equivalent ./...             # the stacks behave alike
//	go test -run '^$' -bench . -benchmem      # the comparison, one stack at a time
//	go run ./cmd/interleaved                  # the comparison, interleaved
//	go run ./cmd/scenarios                    # what resilience is for
//
// cmd/interleaved (Interleaving) is the one to trust on a shared machine:
// each round runs every stack once, in rotated order, and each stack's
// figure is the median of its time divided by the bare client's in the
// same round, for wall and CPU time, beside its allocations per call.
// `-count N` runs all samples of one stack back to back instead, so a burst
// of load lands on one stack alone.
//
// The last is the scenario harness (package scenario): the stacks against a
// real loopback server that injects its own faults (transient 503s, a
// heavy latency tail, a hard outage and the recovery after it), printed as
// one table; `go test ./scenario` runs it with tiny counts.
//
// TestEquivalent proves the stacks alike (attempt counts, superseded
// response bodies closed, the last body intact) before their numbers are
// compared; see its doc for what it checks.
package benchmarks
