package scenario

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteTable writes rows as a Markdown table, one line per stack, and a
// note under it for each stack that was skipped or dropped calls.
func WriteTable(w io.Writer, o Options, rows []Row) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| stack | %.0f %% 503s: calls OK | attempts/call | tail p50 | tail p99 | tail p99.9 | tail max | tail attempts/call | outage: attempts/call | outage: first fast fail | outage: p50 | recovery: first success |\n",
		o.TransientShare*100)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var notes, delayed []string
	for _, r := range rows {
		if r.Skipped != "" {
			b.WriteString("| " + r.Stack + strings.Repeat(" | —", 11) + " |\n")
			notes = append(notes, r.Stack+": "+r.Skipped)
			continue
		}
		t, h, x := r.Transient, r.Tail, r.Outage
		delayed = append(delayed, fmt.Sprintf("%s %d", r.Stack, h.Delayed))
		fmt.Fprintf(&b, "| %s | %s | %.2f | %s | %s | %s | %s | %.2f | %.2f | %s | %s | %s |\n",
			r.Stack, share(t.OK, t.Calls), t.Attempts,
			ms(h.P50), ms(h.P99), ms(h.P999), ms(h.Max), h.Attempts,
			x.Attempts, ms(x.FirstFastFail), ms(x.P50), ms(x.Recovery))
		if h.OK < h.Calls {
			notes = append(notes, fmt.Sprintf("%s: %d of %d heavy-tail calls failed", r.Stack, h.Calls-h.OK, h.Calls))
		}
		if x.Recovery < 0 {
			notes = append(notes, fmt.Sprintf("%s: no call succeeded within %s of the backend's return", r.Stack, o.After))
		}
		if x.Dropped > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d outage calls not sent (%d in flight at most)", r.Stack, x.Dropped, o.MaxInFlight))
		}
	}
	if len(delayed) > 0 {
		notes = append([]string{"Heavy tail, attempts the server delayed: " + strings.Join(delayed, ", ") + "."}, notes...)
	}
	for _, n := range notes {
		b.WriteString("\n" + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// share formats ok of n as a percentage with the counts.
func share(ok, n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f %% (%d/%d)", 100*float64(ok)/float64(n), ok, n)
}

// ms formats d in milliseconds, "—" for -1 (not measured).
func ms(d time.Duration) string {
	switch {
	case d < 0:
		return "—"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
}

// Describe says in one paragraph what a run with o does.
func Describe(o Options) string {
	p := o.Policy
	return fmt.Sprintf("Policy: %d retries, backoff cap %s doubling to %s (full jitter: %t), breaker %d failures / %s cooldown, hedge delay %s. "+
		"Transient: %d calls, %d at a time, %.0f %% of attempts 503. Tail: %d calls, %d at a time, %.1f %% of attempts %s, the rest %s. "+
		"Outage: a call every %s; %s healthy, %s hard down (every attempt 503), %s healthy; fast fail < %s. Each call bounded by %s.",
		p.MaxRetries, p.InitialBackoff, p.MaxBackoff, p.FullJitter, p.FailureThreshold, p.Cooldown, o.HedgeDelay,
		o.TransientCalls, o.Concurrency, o.TransientShare*100, o.TailCalls, o.Concurrency, o.TailShare*100, o.TailDelay, o.Latency,
		o.Interval, o.Warmup, o.Outage, o.After, o.FastFail, o.CallTimeout)
}
