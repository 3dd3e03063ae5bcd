package middleware_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-http/switchboard/middleware"
)

// queueingBackend is a fake backend with a capacity: a call takes base
// while at most capacity calls are in flight, and base·inflight/capacity
// beyond (latency grows with queueing). It answers 200 with a small body.
type queueingBackend struct {
	base     time.Duration
	capacity atomic.Int64
	inflight atomic.Int64
	calls    atomic.Int64
}

func (q *queueingBackend) RoundTrip(req *http.Request) (*http.Response, error) {
	n := q.inflight.Add(1)
	defer q.inflight.Add(-1)
	q.calls.Add(1)
	d := q.base
	if c := q.capacity.Load(); n > c {
		d = q.base * time.Duration(n) / time.Duration(c)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

// adaptiveBulkhead returns mode adaptive with the given limits and a max
// wait of a minute.
func adaptiveBulkhead(lo, hi, initial int) middleware.BulkheadSettings {
	return middleware.BulkheadSettings{Mode: middleware.BulkheadAdaptive, MinLimit: lo, MaxLimit: hi, InitialLimit: initial, MaxWait: time.Minute}
}

// drive runs workers goroutines that call rt in a loop until stop is
// closed, each reading and closing its response.
func drive(ctx context.Context, rt http.RoundTripper, workers int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://svc.test/v1/items", nil)
				resp, err := rt.RoundTrip(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	return &wg
}

// TestAdaptiveBulkheadLimitFollowsLatency drives an adaptive bulkhead with
// 40 callers against a backend whose capacity drops from 30 to 5 and comes
// back: while latency holds the limit grows from initial_limit; once
// latency grows with queueing it falls within a few recent windows (1 s
// each here); once latency is back it grows again.
func TestAdaptiveBulkheadLimitFollowsLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		be := &queueingBackend{base: 50 * time.Millisecond}
		be.capacity.Store(30)
		bh := middleware.NewBulkhead(adaptiveBulkhead(1, 200, 20), middleware.BulkheadOptions{})
		stop := make(chan struct{})
		wg := drive(t.Context(), bh.Middleware()(be), 40, stop)
		var path []int
		second := func(n int) {
			for range n {
				time.Sleep(time.Second)
				path = append(path, bh.Limit())
			}
		}
		second(15)
		healthy := bh.Limit()
		be.capacity.Store(5)
		second(5)
		early := bh.Limit()
		second(10)
		slow := bh.Limit()
		lowest := slices.Min(path[15:])
		be.capacity.Store(30)
		second(15)
		back := bh.Limit()
		close(stop)
		wg.Wait()
		t.Logf("limit each second: %v", path)
		if healthy < 28 {
			t.Errorf("healthy backend: limit %d after 15s, want it grown from 20 to >= 28", healthy)
		}
		if early >= healthy {
			t.Errorf("5s after latency grew: limit %d, want below %d", early, healthy)
		}
		if slow > healthy-5 {
			t.Errorf("15s after latency grew: limit %d, want <= %d", slow, healthy-5)
		}
		if back < lowest+5 {
			t.Errorf("15s after latency came back: limit %d, want >= %d (lowest %d + 5)", back, lowest+5, lowest)
		}
	})
}
