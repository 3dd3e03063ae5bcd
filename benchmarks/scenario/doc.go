// Package scenario measures what resilience is for: each stack of the
// comparison (see Names) against a real loopback server (httptest on
// 127.0.0.1) that injects faults of its own, decided per attempt on the
// server side, so the clients meet them as they would meet real ones.
//
//	transient   20 % of attempts 503          → share of logical calls that succeed
//	heavy tail  1 % of attempts 500ms, else 2ms → p50, p99, p99.9 of the logical call
//	outage      every attempt 503 for 5s,     → attempts per call (load amplification),
//	            a call every 10ms               time until a call fails fast, p50
//	recovery    the backend back              → time until the first success
//
// Each scenario gets a fresh server (seeded: every stack sees the same
// sequence of faults) and a fresh stack (no breaker or budget state carried
// over). The server counts attempts per logical call by a header the
// caller sets (CallHeader), whatever the stack does in between.
//
// Run is bounded: fixed call counts, fixed phases, a deadline on every call;
// it returns when every call has ended. Full() is docs/performance.md's run
// (`go run ./cmd/scenarios`, about two minutes on 2 cores); Smoke() is CI's,
// a few seconds, whose test checks structure and never numbers.
//
// Two more scenarios measure limits and coalescing against a Backend that
// models capacity (workers of a fixed service time behind one FIFO queue):
//
//	capacity    an open loop of 400 calls/s; 64 workers of 50ms for 10s,  → goodput, p50, p99 per phase,
//	            then 8 workers for 30s                                       the limit's path (RunCapacity)
//	coalesce    bursts of 200 identical GETs released at once              → backend requests per burst,
//	                                                                         the burst's latency (RunCoalesce)
//
// Their stacks (CapacityNames, CoalesceNames) run in interleaved rounds:
// each round runs every stack once, in an order rotated by one stack per
// round, and the figures are medians over the rounds.
package scenario
