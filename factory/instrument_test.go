package factory_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/eventrec"
	"github.com/switchboard-http/switchboard/middleware"
)

// tag returns a middleware that appends name to *order on every request.
func tag(order *[]string, name string) middleware.Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			*order = append(*order, name)
			return next.RoundTrip(r)
		})
	}
}

func TestInstrumentPutsTheIntegrationOutsideTheApplicationsHooks(t *testing.T) {
	var order []string
	var app, integration eventrec.Recorder
	o := factory.Options{
		Observer: &app,
		Hooks:    factory.Hooks{Outer: []middleware.Middleware{tag(&order, "hooks.outer")}},
		HooksFor: func(string) factory.Hooks {
			return factory.Hooks{Outer: []middleware.Middleware{tag(&order, "app.outer")}}
		},
	}
	factory.Instrument(&o, &integration, func(name string) factory.Hooks {
		return factory.Hooks{Outer: []middleware.Middleware{tag(&order, "integration."+name)}}
	})

	if len(o.Hooks.Outer) != 0 {
		t.Errorf("o.Hooks.Outer: got %d middleware, want them moved into HooksFor", len(o.Hooks.Outer))
	}
	h := o.HooksFor("billing")
	rt := middleware.Chain(h.Outer...)(middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	}))
	req, _ := http.NewRequest(http.MethodGet, "http://billing.test/", nil)
	if _, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if want := []string{"integration.billing", "hooks.outer", "app.outer"}; !slices.Equal(order, want) {
		t.Errorf("outer middleware order: got %v, want %v", order, want)
	}

	o.Observer.OnEvent(context.Background(), middleware.Event{Name: "retry.attempt"})
	if len(integration.Named("retry.attempt")) != 1 || len(app.Named("retry.attempt")) != 1 {
		t.Errorf("events: integration got %v, application got %v; want one each", integration.Names(), app.Names())
	}
}

func TestInstrumentWithoutPriorHooksOrObserver(t *testing.T) {
	var integration eventrec.Recorder
	var o factory.Options
	factory.Instrument(&o, &integration, func(string) factory.Hooks {
		return factory.Hooks{Attempt: []middleware.Middleware{func(next http.RoundTripper) http.RoundTripper { return next }}}
	})
	if o.Observer != &integration {
		t.Errorf("Observer: got %T, want the integration itself", o.Observer)
	}
	if got := len(o.HooksFor("x").Attempt); got != 1 {
		t.Errorf("HooksFor(x).Attempt: got %d middleware, want 1", got)
	}
}
