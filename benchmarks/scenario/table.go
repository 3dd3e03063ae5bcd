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

// WriteCapacityTable writes the capacity scenario's rows as two Markdown
// tables: goodput and latency per phase, then the limit's path, one column
// every pathEvery (from the medians of the samples), and a note for each
// stack that was skipped.
func WriteCapacityTable(w io.Writer, o CapacityOptions, rows []CapacityRow, pathEvery time.Duration) error {
	var b strings.Builder
	hi, lo := float64(o.High)/o.Service.Seconds(), float64(o.Low)/o.Service.Seconds()
	fmt.Fprintf(&b, "| stack | %d workers: goodput | p50 | p99 | refused | %d workers: goodput | p50 | p99 | refused | failed | last %s: goodput | p99 |\n",
		o.High, o.Low, o.Settled)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| *most the backend can serve* | %.0f/s | | | | %.0f/s | | | | | %.0f/s | |\n", min(hi, o.Rate), min(lo, o.Rate), min(lo, o.Rate))
	var notes []string
	for _, r := range rows {
		if r.Skipped != "" {
			b.WriteString("| " + r.Stack + strings.Repeat(" | —", 11) + " |\n")
			notes = append(notes, r.Stack+": "+r.Skipped)
			continue
		}
		h, d, s := r.Healthy, r.Degraded, r.Settled
		fmt.Fprintf(&b, "| %s | %.0f/s | %s | %s | %s | %.0f/s | %s | %s | %s | %s | %.0f/s | %s |\n",
			r.Stack, h.Goodput, ms(h.P50), ms(h.P99), pct(h.Refused, h.Calls),
			d.Goodput, ms(d.P50), ms(d.P99), pct(d.Refused, d.Calls), pct(d.Failed, d.Calls),
			s.Goodput, ms(s.P99))
	}
	step := max(int(pathEvery/o.SampleEvery), 1)
	b.WriteString("\nThe concurrency limit (median of the rounds), every " + pathEvery.String() + "; ↓ marks the drop:\n\n| stack |")
	var n int
	for _, r := range rows {
		n = max(n, len(r.Path))
	}
	drop := int(o.Healthy / o.SampleEvery)
	for i := 0; i < n; i += step {
		mark := ""
		if i >= drop && i-step < drop {
			mark = " ↓"
		}
		fmt.Fprintf(&b, " %gs%s |", (time.Duration(i) * o.SampleEvery).Seconds(), mark)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", (n+step-1)/step) + "\n")
	for _, r := range rows {
		if r.Skipped != "" {
			continue
		}
		b.WriteString("| " + r.Stack + " |")
		for i := 0; i < n; i += step {
			if i < len(r.Path) {
				fmt.Fprintf(&b, " %d |", r.Path[i])
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\nEach round (in the order run): healthy goodput, p99 / slow goodput, p99 / last part p99:\n")
	for _, r := range rows {
		if r.Skipped != "" {
			continue
		}
		var rs []string
		for _, x := range r.Rounds {
			rs = append(rs, fmt.Sprintf("%.0f/s %s / %.0f/s %s / %s", x.Healthy.Goodput, ms(x.Healthy.P99), x.Degraded.Goodput, ms(x.Degraded.P99), ms(x.Settled.P99)))
		}
		b.WriteString("- " + r.Stack + ": " + strings.Join(rs, "; ") + "\n")
	}
	for _, n := range notes {
		b.WriteString("\n" + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// DescribeCapacity says in one paragraph what a capacity run with o does.
func DescribeCapacity(o CapacityOptions) string {
	return fmt.Sprintf("Capacity: an open loop of %.0f calls/s; the backend serves each request in %s with %d workers for %s (at most %.0f/s), then %d workers for %s (at most %.0f/s), a FIFO queue in front; each call bounded by %s; "+
		"the limit read every %s; %d rounds, the stacks in an order rotated each round; figures are medians over the rounds.",
		o.Rate, o.Service, o.High, o.Healthy, float64(o.High)/o.Service.Seconds(), o.Low, o.Degraded, float64(o.Low)/o.Service.Seconds(),
		o.CallTimeout, o.SampleEvery, max(o.Rounds, 1))
}

// WriteCoalesceTable writes the coalescing scenario's rows as a Markdown
// table and a note for each stack that was skipped or lost calls.
func WriteCoalesceTable(w io.Writer, o CoalesceOptions, rows []CoalesceRow) error {
	var b strings.Builder
	b.WriteString("| stack | backend requests per burst (median, range) | burst: last answer | caller p50 | caller p99 |\n|---|---|---|---|---|\n")
	var notes []string
	for _, r := range rows {
		if r.Skipped != "" {
			b.WriteString("| " + r.Stack + strings.Repeat(" | —", 4) + " |\n")
			notes = append(notes, r.Stack+": "+r.Skipped)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d (%d–%d) | %s | %s | %s |\n", r.Stack, r.Requests, r.MinRequests, r.MaxRequests, ms(r.Wall), ms(r.P50), ms(r.P99))
		for i, x := range r.Bursts {
			if x.OK < x.Calls {
				notes = append(notes, fmt.Sprintf("%s: burst %d: %d of %d calls failed", r.Stack, i+1, x.Calls-x.OK, x.Calls))
			}
		}
	}
	for _, n := range notes {
		b.WriteString("\n" + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// DescribeCoalesce says in one paragraph what a coalescing run with o does.
func DescribeCoalesce(o CoalesceOptions) string {
	return fmt.Sprintf("Coalescing: bursts of %d identical GETs released at once (each caller's request built beforehand); the backend serves each request in %s with %d workers; %d bursts per stack, the stacks alternating; each call bounded by %s.",
		o.Callers, o.Service, o.Workers, max(o.Rounds, 1), o.CallTimeout)
}

// pct formats n of total as a percentage, "—" for no calls.
func pct(n, total int) string {
	if total == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f %%", 100*float64(n)/float64(total))
}
