package middleware_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/switchboard-http/switchboard/middleware"
)

func TestChainOrder(t *testing.T) {
	var order []string
	tag := func(name string) middleware.Middleware {
		return func(next http.RoundTripper) http.RoundTripper {
			return middleware.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
				order = append(order, name+">")
				resp, err := next.RoundTrip(r)
				order = append(order, "<"+name)
				return resp, err
			})
		}
	}
	base := middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		order = append(order, "base")
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})
	rt := middleware.Chain(tag("a"), nil, tag("b"), tag("c"))(base)
	req, _ := http.NewRequest("GET", "http://svc.test/", nil)
	if _, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	want := []string{"a>", "b>", "c>", "base", "<c", "<b", "<a"}
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("got %v, want %v", order, want)
	}
}

func TestChainEmptyReturnsNext(t *testing.T) {
	base := middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, nil })
	if got := middleware.Chain()(base); reflect.ValueOf(got).Pointer() != reflect.ValueOf(base).Pointer() {
		t.Fatal("Chain() changed its argument")
	}
}

// TestNoConstructorReturnsNilMiddleware: a layer with nothing to do is the
// identity (next itself), never a nil Middleware, so callers may apply any
// constructor's result directly.
func TestNoConstructorReturnsNilMiddleware(t *testing.T) {
	next := middleware.RoundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, nil })
	for name, mw := range map[string]middleware.Middleware{
		"Headers(nil)":       middleware.Headers(nil, middleware.HeadersOptions{}),
		"Headers(empty)":     middleware.Headers(map[string]string{}, middleware.HeadersOptions{}),
		"Logging(off)":       middleware.Logging(middleware.LoggingSettings{Level: middleware.LogOff}, middleware.LoggingOptions{}),
		"Logging(no events)": middleware.Logging(middleware.LoggingSettings{}, middleware.LoggingOptions{}),
	} {
		if mw == nil {
			t.Errorf("%s: got a nil Middleware, want the identity", name)
			continue
		}
		if rt := mw(next); rt == nil {
			t.Errorf("%s: got a nil RoundTripper", name)
		}
	}
}
