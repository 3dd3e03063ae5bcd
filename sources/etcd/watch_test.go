package etcdsource_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	etcdsource "github.com/switchboard-http/switchboard/sources/etcd"
)

func TestWatchNotifiesEveryChangeSinceTheLastRead(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	put(t, cli, "/switchboard/clients.yaml", doc)
	src := etcdsource.Key(cli, "/switchboard/clients.yaml", etcdsource.Options{})
	if _, err := src.Read(); err != nil {
		t.Fatal(err)
	}
	// A put between the read and the watch (Open's first load, then its
	// watch) is not missed: the watch starts after the read's revision.
	put(t, cli, "/switchboard/clients.yaml", doc+"# 1\n")
	put(t, cli, "/switchboard/other", "not watched")

	c := newCounter()
	stop, err := src.Watch(c.notify)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c.wait(t, 10*time.Second, "a put made before the watch started")
	for i := range 5 {
		put(t, cli, "/switchboard/clients.yaml", doc+"# "+strconv.Itoa(i+2)+"\n")
		c.wait(t, 10*time.Second, "a put")
	}
	stop()
	stop() // twice is fine
	n := c.count()
	put(t, cli, "/switchboard/clients.yaml", doc+"# after stop\n")
	if _, err := src.Read(); err != nil { // a round trip after the put
		t.Fatal(err)
	}
	if got := c.count(); got != n || got != 6 {
		t.Fatalf("notifications: got %d (%d before stop), want 6 and none after stop", got, n)
	}
}

func TestWatchPrefix(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	src := etcdsource.Prefix(cli, "/switchboard/", etcdsource.Options{})
	c := newCounter()
	stop, _ := src.Watch(c.notify) // nothing read: from the current revision
	defer stop()
	// The watch is established asynchronously; a put that lands before it
	// would not be seen, so keep putting until one is.
	deadline := time.Now().Add(10 * time.Second)
	for c.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no notification within 10s of puts under the prefix")
		}
		put(t, cli, "/switchboard/clients/billing/timeout", "2s")
		select {
		case <-c.ch:
		case <-time.After(200 * time.Millisecond):
		}
	}
	put(t, cli, "/switchboard-old/x", "1")
	if _, err := cli.Delete(context.Background(), "/switchboard/clients/billing/timeout"); err != nil {
		t.Fatal(err)
	}
	c.wait(t, 10*time.Second, "a delete under the prefix")
}

func TestWatchResumesAfterEtcdRestarts(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	put(t, cli, "/switchboard/clients.yaml", doc)
	src := etcdsource.Key(cli, "/switchboard/clients.yaml", etcdsource.Options{ReadTimeout: 300 * time.Millisecond})
	if _, err := src.Read(); err != nil {
		t.Fatal(err)
	}
	c := newCounter()
	stop, _ := src.Watch(c.notify)
	defer stop()
	put(t, cli, "/switchboard/clients.yaml", doc+"# 1\n")
	c.wait(t, 10*time.Second, "a put")

	srv.Stop()
	if _, err := src.Read(); err == nil {
		t.Fatal("Read with etcd stopped: got nil error")
	}
	start := time.Now()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	put(t, cli, "/switchboard/clients.yaml", doc+"# 2\n")
	c.wait(t, 30*time.Second, "the first put after etcd restarted")
	t.Logf("restart → notified: %v", time.Since(start).Round(time.Millisecond))
}

func TestWatchAfterCompactionNotifiesAndGoesOn(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	put(t, cli, "/switchboard/clients.yaml", doc)
	src := etcdsource.Key(cli, "/switchboard/clients.yaml", etcdsource.Options{})
	if _, err := src.Read(); err != nil {
		t.Fatal(err)
	}
	// Changes the watch has not seen, then compacted away: the watch,
	// starting after the read's revision, finds it compacted.
	var rev int64
	for i := range 3 {
		rev = put(t, cli, "/switchboard/clients.yaml", doc+"# "+strconv.Itoa(i)+"\n")
	}
	if _, err := cli.Compact(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	c := newCounter()
	stop, _ := src.Watch(c.notify)
	defer stop()
	c.wait(t, 10*time.Second, "a watch started at a compacted revision")
	put(t, cli, "/switchboard/clients.yaml", doc+"# after compaction\n")
	c.wait(t, 10*time.Second, "a put after the compaction")
}

func TestStopWhileEtcdIsDown(t *testing.T) {
	srv := startEtcd(t)
	cli := newClient(t, srv)
	src := etcdsource.Key(cli, "/switchboard/clients.yaml", etcdsource.Options{})
	stop, _ := src.Watch(func() {})
	srv.Stop()
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return within 10s while etcd was down")
	}
}
