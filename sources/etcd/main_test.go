package etcdsource_test

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/sources/etcd/internal/etcdtest"
)

// Every test stops the etcd it started and closes its clients, so no
// goroutine of etcd's server or client may be left when the tests end;
// no goleak option is needed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startEtcd starts a real etcd member for the test, stopped at its end.
func startEtcd(t *testing.T) *etcdtest.Server {
	t.Helper()
	srv, err := etcdtest.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// newClient returns a client of srv, closed at the test's end (before srv
// stops, since cleanups run last first).
func newClient(t *testing.T, srv *etcdtest.Server) *clientv3.Client {
	t.Helper()
	cli, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// put writes key = value and returns the store's revision after it.
func put(t *testing.T, cli *clientv3.Client, key, value string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rev, err := etcdtest.Put(ctx, cli, key, value)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return rev
}

// counter counts notifications and lets a test wait for the next ones.
type counter struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func newCounter() *counter { return &counter{ch: make(chan struct{}, 1000)} }

func (c *counter) notify() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	c.ch <- struct{}{}
}

func (c *counter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// wait waits for one notification, failing the test after d.
func (c *counter) wait(t *testing.T, d time.Duration, what string) {
	t.Helper()
	select {
	case <-c.ch:
	case <-time.After(d):
		t.Fatalf("no notification within %v of %s", d, what)
	}
}
