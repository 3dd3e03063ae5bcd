package middleware

import (
	"log/slog"
	"net/http"
	"time"
)

// LoggingOptions are the code-only options of Logging. The zero value logs
// nothing (no Events, no logger). Logging copies it.
type LoggingOptions struct {
	// Events holds the logger (Events.Logger) and the client name
	// (Events.Client) of the records; nil, or a nil Logger, logs nothing.
	Events *Events
}

// Logging returns the middleware that logs one record per attempt to
// o.Events.Logger, at slog.LevelDebug for LogDebug (and ""), slog.LevelInfo
// for LogInfo (s.Level). The record's message is "http attempt" and its attributes are
// client, method, url (redacted by RedactURL), attempt (AttemptFrom: 1 for
// the first), status or error (redacted by RedactError), and duration (from
// the attempt's start to its response headers or error). It never logs
// headers or bodies.
//
// It sits innermost, just above the base transport, so it sees each attempt
// as sent, credential and all, and logs none of it. A level of LogOff, a
// nil Events or a nil Events.Logger returns a middleware that returns its
// next RoundTripper itself: no layer, no cost. When the logger
// is not enabled at the level (checked per request) the layer passes the
// request on without reading the clock or allocating. It never changes the
// request or the response and is safe for concurrent use.
func Logging(s LoggingSettings, o LoggingOptions) Middleware {
	ev := o.Events
	if s.Level == LogOff || ev == nil || ev.Logger == nil {
		return identity
	}
	lvl := slog.LevelDebug
	if s.Level == LogInfo {
		lvl = slog.LevelInfo
	}
	logger, client := ev.Logger, ev.Client
	return func(next http.RoundTripper) http.RoundTripper {
		return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			ctx := req.Context()
			if !logger.Enabled(ctx, lvl) {
				return next.RoundTrip(req)
			}
			start := time.Now()
			resp, err := next.RoundTrip(req)
			d := time.Since(start)
			attrs := make([]slog.Attr, 0, 6)
			attrs = append(attrs,
				slog.String("client", client),
				slog.String("method", req.Method),
				slog.String("url", RedactURL(req.URL)),
				slog.Int("attempt", AttemptFrom(ctx)),
			)
			switch {
			case err != nil:
				attrs = append(attrs, slog.String("error", RedactError(err, req.URL).Error()))
			case resp != nil:
				attrs = append(attrs, slog.Int("status", resp.StatusCode))
			}
			attrs = append(attrs, slog.Duration("duration", d))
			logger.LogAttrs(ctx, lvl, "http attempt", attrs...)
			return resp, err
		})
	}
}
