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
