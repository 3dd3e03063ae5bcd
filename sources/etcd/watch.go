package etcdsource

import (
	"context"
	"errors"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watch watches the key (or prefix) with etcd's watch API and calls notify
// once for every change event, from the Source's one watch goroutine. The
// watch starts just after the highest revision a read has seen (so a
// change between factory.Open's first read and the watch is not missed),
// or at the current revision when nothing was read yet.
//
// The client resumes a watch by itself across reconnects, from the next
// revision. When the watch fails anyway (the server cancelled it, the
// cluster has no leader, the revision was compacted), it is re-established
// from the last revision delivered, after a backoff of 100ms doubling up to
// 5s, and one WARN is logged. A compaction means changes may have been
// missed: notify is called, so that a reload reads the current value, and
// the watch goes on from the compacted revision.
//
// stop cancels the watch's context and returns once the goroutine has
// ended; no notify is called after it. It is safe to call more than once,
// from any goroutine. Watch itself does not fail.
func (s *Source) Watch(notify func()) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.watch(ctx, notify)
	}()
	var once sync.Once
	return func() {
		once.Do(cancel)
		<-done
	}, nil
}

// watch runs watches one after another until ctx ends.
func (s *Source) watch(ctx context.Context, notify func()) {
	next := s.rev.Load() + 1
	if next == 1 {
		next = 0 // nothing read: from the current revision
	}
	backoff := minWatchBackoff
	for {
		delivered, err := s.watchOnce(ctx, &next, notify)
		if ctx.Err() != nil {
			return
		}
		if s.cli.Ctx().Err() != nil {
			// The caller closed the client: no watch can come back. Say so
			// once; reloads then read through a closed client and fail.
			s.log.Error("etcd client closed; the watch has stopped", "source", s.name, "key", s.key)
			return
		}
		if delivered {
			backoff = minWatchBackoff
		}
		s.log.Warn("etcd watch failed; re-establishing it",
			"source", s.name, "key", s.key, "from_revision", next, "in", backoff, "error", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, maxWatchBackoff)
	}
}

// errWatchClosed reports a watch channel closed without an error response.
var errWatchClosed = errors.New("watch channel closed")

// watchOnce runs one watch from *next until it fails or ctx ends, moving
// *next past every revision delivered. delivered reports whether the
// watch got as far as one response.
func (s *Source) watchOnce(ctx context.Context, next *int64, notify func()) (delivered bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // releases the client's side of this watch
	opts := []clientv3.OpOption{clientv3.WithCreatedNotify()}
	if s.prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	if *next > 0 {
		opts = append(opts, clientv3.WithRev(*next))
	}
	for resp := range s.cli.Watch(clientv3.WithRequireLeader(wctx), s.key, opts...) {
		if err := resp.Err(); err != nil {
			if resp.CompactRevision > *next {
				*next = resp.CompactRevision
				notify()
			}
			return delivered, err
		}
		delivered = true
		if *next == 0 && resp.Header.GetRevision() > 0 {
			*next = resp.Header.GetRevision() + 1 // from now: resume after the creation's revision
		}
		for _, ev := range resp.Events {
			*next = max(*next, ev.Kv.ModRevision+1)
			notify()
		}
	}
	if err := ctx.Err(); err != nil {
		return delivered, err
	}
	return delivered, errWatchClosed
}
