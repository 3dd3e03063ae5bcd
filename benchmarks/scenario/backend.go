package scenario

import (
	"container/list"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// Backend is a loopback HTTP server (httptest, 127.0.0.1) that models a
// service of limited capacity: it has a number of workers, each serving one
// request at a time for a fixed service time, and one FIFO queue in front
// of them. A request that finds every worker busy waits in the queue, so
// its latency is its wait plus the service time: beyond capacity, latency
// grows with the queue and throughput does not. Every request is answered
// 200 "ok".
//
// A request whose client goes away while it waits in the queue leaves the
// queue without taking a worker (Go's server cancels the request's context
// when the connection closes, and the handler looks): the model most
// favourable to a client that queues a lot, since it wastes no work on
// callers long gone. A request that has reached a worker is served to the
// end whatever its client does.
//
// SetWorkers changes the capacity while requests are in flight: requests in
// service finish, and the queue is admitted only while fewer than the new
// number of workers are busy. Safe for concurrent use.
type Backend struct {
	URL string

	srv     *httptest.Server
	service time.Duration

	requests atomic.Int64 // every request that arrived

	mu        sync.Mutex // guards the fields below
	workers   int
	busy      int
	maxBusy   int
	queue     list.List // of *backendWaiter, oldest first
	served    int
	abandoned int
}

// backendWaiter is one request waiting in the Backend's queue. granted is
// guarded by the Backend's mu; ready is closed when it is set.
type backendWaiter struct {
	ready   chan struct{}
	granted bool
}

// NewBackend starts a Backend with workers workers and the service time
// service; Close stops it.
func NewBackend(workers int, service time.Duration) *Backend {
	b := &Backend{workers: workers, service: service}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	b.URL = b.srv.URL
	return b
}

// SetWorkers changes the number of workers to n (at least 1).
func (b *Backend) SetWorkers(n int) {
	b.mu.Lock()
	b.workers = max(n, 1)
	b.grantLocked()
	b.mu.Unlock()
}

// Requests returns how many requests have arrived, served or not.
func (b *Backend) Requests() int { return int(b.requests.Load()) }

// Counts returns how many requests were served, how many left the queue
// because their client had gone, and the most workers ever busy at once.
func (b *Backend) Counts() (served, abandoned, maxBusy int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.served, b.abandoned, b.maxBusy
}

// Close stops the server once the requests in service have ended.
func (b *Backend) Close() { b.srv.Close() }

func (b *Backend) serve(w http.ResponseWriter, r *http.Request) {
	b.requests.Add(1)
	if !b.acquire(r.Context()) {
		return // the client has gone: nothing to answer
	}
	t := time.NewTimer(b.service)
	<-t.C // a worker, once it has the request, does the work
	b.release()
	_, _ = w.Write([]byte(okBody))
}

// acquire takes a worker, waiting in the queue while every worker is busy;
// it returns false, without a worker, if ctx ends first.
func (b *Backend) acquire(ctx context.Context) bool {
	b.mu.Lock()
	if b.busy < b.workers && b.queue.Len() == 0 {
		b.takeLocked()
		b.mu.Unlock()
		return true
	}
	w := &backendWaiter{ready: make(chan struct{})}
	e := b.queue.PushBack(w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return true
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted { // granted as the client left: hand the worker on
		b.busy--
		b.grantLocked()
	} else {
		b.queue.Remove(e)
	}
	b.abandoned++
	return false
}

func (b *Backend) release() {
	b.mu.Lock()
	b.busy--
	b.served++
	b.grantLocked()
	b.mu.Unlock()
}

func (b *Backend) takeLocked() {
	b.busy++
	b.maxBusy = max(b.maxBusy, b.busy)
}

// grantLocked admits queued requests, oldest first, while workers are free.
func (b *Backend) grantLocked() {
	for b.busy < b.workers && b.queue.Len() > 0 {
		w := b.queue.Remove(b.queue.Front()).(*backendWaiter)
		w.granted = true
		b.takeLocked()
		close(w.ready)
	}
}
