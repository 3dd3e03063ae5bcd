package factory

import (
	"context"

	"github.com/switchboard-http/switchboard/middleware"
)

// Instrument wires a telemetry integration into o before Open or New: obs
// becomes o's Observer, followed by the Observer o had, if any; and every
// client's Outer and Attempt middleware are hooksFor's, outermost, with the
// middleware of o.Hooks and of the HooksFor o had (if any) just inside
// them, in their order. So the integration sees each call and each attempt
// as the caller and the transport do. Every other field of o.Hooks and of
// the application's HooksFor stays where it is. Middleware added to o.Hooks
// after Instrument run outside the integration's. A nil obs or hooksFor
// leaves that part of o as it is. The OpenTelemetry and Prometheus adapters
// call it from their own Instrument; it is not safe to call concurrently
// with Open on the same Options.
func Instrument(o *Options, obs middleware.Observer, hooksFor func(name string) Hooks) {
	if obs != nil {
		if prev := o.Observer; prev != nil {
			o.Observer = middleware.ObserverFunc(func(ctx context.Context, e middleware.Event) {
				obs.OnEvent(ctx, e)
				prev.OnEvent(ctx, e)
			})
		} else {
			o.Observer = obs
		}
	}
	if hooksFor == nil {
		return
	}
	outer, attempt, prev := o.Hooks.Outer, o.Hooks.Attempt, o.HooksFor
	o.Hooks.Outer, o.Hooks.Attempt = nil, nil
	o.HooksFor = func(name string) Hooks {
		h := hooksFor(name)
		h.Outer = append(h.Outer, outer...)
		h.Attempt = append(h.Attempt, attempt...)
		if prev == nil {
			return h
		}
		// Every field of the application's hooks stands (a field added
		// to Hooks later included); only its middleware go inside.
		p := prev(name)
		p.Outer = append(h.Outer, p.Outer...)
		p.Attempt = append(h.Attempt, p.Attempt...)
		return p
	}
}
