package middleware

import (
	"context"
	"log/slog"
	"time"
)

// The event names. Each is the value of the `event` attribute of a slog
// record and the Name of an Event given to an Observer. They are part of the
// contract: renaming one is a breaking change.
const (
	EventRetryAttempt         = "retry.attempt"
	EventRetryExhausted       = "retry.exhausted"
	EventRetryBudgetExhausted = "retry.budget_exhausted"
	EventCircuitOpened        = "circuit.opened"
	EventCircuitHalfOpen      = "circuit.half_open"
	EventCircuitClosed        = "circuit.closed"
	EventCircuitRejected      = "circuit.rejected"
	EventBulkheadRejected     = "bulkhead.rejected"
	// EventBulkheadLimitChanged: an adaptive bulkhead's learned limit
	// moved by 10 % or more from the last value reported (or from its
	// initial_limit); OldLimit and NewLimit say from what to what. Info.
	EventBulkheadLimitChanged = "bulkhead.limit_changed"
	EventRateLimitWaited      = "ratelimit.waited"
	// EventRateLimitRefused: an attempt refused with ErrRateLimited
	// before it was sent (its wait could not end before the deadline, or
	// the store failed with on_store_error deny). Debug.
	EventRateLimitRefused = "ratelimit.refused"
	// EventRateLimitPaused: a 429 or 503 paused a quota (respect_server;
	// Info, Delay the pause, Status the response's), or an attempt met a
	// pause (Debug, Delay the time left).
	EventRateLimitPaused = "ratelimit.paused"
	// EventRateLimitStoreError: a fleet quota's store failed or timed out;
	// Warn for the first failure of a spell, Debug for the others.
	EventRateLimitStoreError = "ratelimit.store_error"
	// EventRateLimitStoreRecovered: the store answers again after a
	// failing spell. Info.
	EventRateLimitStoreRecovered = "ratelimit.store_recovered"
	EventTimeoutExceeded         = "timeout.exceeded"
	EventConfigReloaded          = "config.reloaded"
	EventConfigRejected          = "config.rejected"
	EventConfigUnchanged         = "config.unchanged"
	EventFaultInjected           = "fault.injected"
	EventHedgeSent               = "hedge.sent"
	EventHedgeWon                = "hedge.won"
	EventHedgeCancelled          = "hedge.cancelled"
	// EventCoalesceJoined: a call joined a coalesced trip already under
	// way and waits for its answer (one per caller that joined, as it
	// joins; the first caller of a trip emits none). A caller that then
	// leaves, or sends its own request because the answer is over
	// max_body, has emitted it too. Debug.
	EventCoalesceJoined = "coalesce.joined"
)

// Event is one thing that happened in a pipeline, as handed to an Observer.
// Fields that do not apply to an event are zero. URL is always redacted.
type Event struct {
	Name    string        // one of the Event* constants
	Client  string        // the client's name
	Group   string        // the group of a shared breaker, bulkhead or limiter; "" for a client's own
	Method  string        // request method, when the event concerns a request
	URL     string        // redacted request URL
	Host    string        // request URL host (breaker scope "host")
	Attempt int           // 1-based attempt number
	Status  int           // response status, 0 if none
	Delay   time.Duration // a wait: backoff before a retry, limiter wait, time until the next probe
	Err     error         // the error, already redacted
	Reason  string        // free text: why a breaker opened, why a reload was rejected
	Scope   string        // a rate-limit event's quota scope: "process" or "fleet"
	// OldLimit and NewLimit are an adaptive bulkhead's limit before and
	// after a change (EventBulkheadLimitChanged); zero otherwise.
	OldLimit, NewLimit int
}

// Observer receives every event of the clients it is given to, for metrics.
// OnEvent is called synchronously on the request's goroutine and never with
// a lock held; it must be safe for concurrent use and should be quick.
type Observer interface {
	OnEvent(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, e Event)

// OnEvent calls f(ctx, e).
func (f ObserverFunc) OnEvent(ctx context.Context, e Event) { f(ctx, e) }

// Events sends events to a logger and an observer. The zero value drops
// every event. It is safe for concurrent use.
type Events struct {
	Client   string
	Group    string       // set for the events of a component shared by a group
	Logger   *slog.Logger // nil: no log records
	Observer Observer     // nil: no observer
	// Records is which events become records of Logger (logging.events);
	// "" means EventsAll. The Observer gets every event regardless.
	Records LogEvents
}

// Emit logs e at level with its `event` attribute and hands it to the observer.
// It builds the record only when the logger is enabled at level, so a
// disabled level costs no allocation.
func (ev *Events) Emit(ctx context.Context, level slog.Level, e Event) {
	if ev == nil {
		return
	}
	e.Client, e.Group = ev.Client, ev.Group
	if ev.Observer != nil {
		ev.Observer.OnEvent(ctx, e)
	}
	if !ev.logs(ctx, level) {
		return
	}
	ev.Logger.LogAttrs(ctx, level, e.Name, e.Attrs()...)
}

// logs reports whether an event at level becomes a record of the logger.
func (ev *Events) logs(ctx context.Context, level slog.Level) bool {
	switch {
	case ev.Logger == nil || ev.Records == EventsOff:
		return false
	case ev.Records == EventsWarn && level < slog.LevelWarn:
		return false
	}
	return ev.Logger.Enabled(ctx, level)
}

// Attrs returns e as the attributes of its slog record: event and client
// always, every other field that is set under its own key (group, method,
// url, host, attempt, status, delay, error, reason, scope, old_limit,
// new_limit). Integrations that
// report events elsewhere (span events) use it, so every sink shows the
// same attributes. e's URL and Err are redacted already when e comes from
// Emit. It allocates the slice.
func (e Event) Attrs() []slog.Attr {
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs, slog.String("event", e.Name), slog.String("client", e.Client))
	if e.Group != "" {
		attrs = append(attrs, slog.String("group", e.Group))
	}
	if e.Method != "" {
		attrs = append(attrs, slog.String("method", e.Method))
	}
	if e.URL != "" {
		attrs = append(attrs, slog.String("url", e.URL))
	}
	if e.Host != "" {
		attrs = append(attrs, slog.String("host", e.Host))
	}
	if e.Attempt > 0 {
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
	}
	if e.Status > 0 {
		attrs = append(attrs, slog.Int("status", e.Status))
	}
	if e.Delay > 0 {
		attrs = append(attrs, slog.Duration("delay", e.Delay))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	if e.Reason != "" {
		attrs = append(attrs, slog.String("reason", e.Reason))
	}
	if e.Scope != "" {
		attrs = append(attrs, slog.String("scope", e.Scope))
	}
	if e.OldLimit > 0 || e.NewLimit > 0 {
		attrs = append(attrs, slog.Int("old_limit", e.OldLimit), slog.Int("new_limit", e.NewLimit))
	}
	return attrs
}

// on reports whether Emit would do anything at level, so that callers can
// skip building an Event (redacting its URL and error) that nobody receives.
func (ev *Events) on(ctx context.Context, level slog.Level) bool {
	return ev != nil && (ev.Observer != nil || ev.logs(ctx, level))
}
