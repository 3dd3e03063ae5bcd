package middleware_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// The timeout layers' context is one of this package's own (see
// deadline_ctx.go); these tests drive it through a real *http.Transport
// and loopback sockets, which derive their own contexts from it and must
// be cancelled by it. They wait on the server and the error, never on a
// guessed duration: the only time in them is the deadline itself.

// stallServer answers after its handler's stall returns: stall before the
// headers, or after them while the body is due. The handler returns when
// the client goes away, so Close never waits for it.
func stallServer(t *testing.T, afterHeaders bool) (url string, gone <-chan struct{}) {
	url, _, gone = stallServerArrivals(t, afterHeaders)
	return url, gone
}

// stallServerArrivals is stallServer that also tells when a request has
// arrived.
func stallServerArrivals(t *testing.T, afterHeaders bool) (url string, arrived, gone <-chan struct{}) {
	t.Helper()
	in, left := make(chan struct{}, 1), make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in <- struct{}{}
		if afterHeaders {
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done() // the client cancelled: the connection is gone
		left <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, in, left
}

func TestTimeoutCancelsARealTransport(t *testing.T) {
	url, arrived, gone := stallServerArrivals(t, false)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: middleware.Timeout(50*time.Millisecond, middleware.TimeoutOptions{})(tr)}
	_, err := client.Get(url)
	var te *middleware.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) || te.PerAttempt {
		t.Fatalf("got %v, want a call *TimeoutError matching DeadlineExceeded", err)
	}
	select {
	case <-arrived:
		<-gone // the server saw the connection cancelled
	default: // on a loaded machine the deadline may pass before the request arrives
	}
}

func TestTimeoutCoversARealBody(t *testing.T) {
	url, gone := stallServer(t, true)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: middleware.Timeout(50*time.Millisecond, middleware.TimeoutOptions{})(tr)}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	var te *middleware.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("reading the body: got %v, want a *TimeoutError matching DeadlineExceeded", err)
	}
	<-gone
}

func TestTimeoutCallerCancelThroughARealTransport(t *testing.T) {
	url, arrived, gone := stallServerArrivals(t, false)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: middleware.Timeout(time.Hour, middleware.TimeoutOptions{})(tr)}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := client.Do(req)
		errc <- err
	}()
	<-arrived
	cancel()
	err := <-errc
	var te *middleware.TimeoutError
	if !errors.Is(err, context.Canceled) || errors.As(err, &te) {
		t.Fatalf("got %v, want the caller's context.Canceled, not a *TimeoutError", err)
	}
	<-gone // the connection was cancelled, through the layer's context
}
