package redisquota_test

import (
	"context"
	"strings"
	"testing"
	"time"

	redisquota "github.com/switchboard-http/switchboard/quotas/redis"
)

// TestTakeIsGCRAWithBurst: burst 3 at 10/s on a real Redis: three taken
// at once, the fourth refused with the wait of one emission (100ms), and
// a second key is a quota of its own. The keys carry the prefix.
func TestTakeIsGCRAWithBurst(t *testing.T) {
	rdb := newClient(t, startRedis(t).Addr)
	s := redisquota.New(rdb, redisquota.Options{Prefix: "app1:"})
	ctx := t.Context()
	for i := range 3 {
		d, err := s.Take(ctx, "stripe", 10, 3, 1)
		// redis_rate truncates a float: 2 may come back as 1.
		if err != nil || !d.Allowed || d.Remaining > 2-i || d.Remaining < 1-i {
			t.Fatalf("take %d: %+v, %v; want allowed, %d (or one less) remaining", i, d, err, 2-i)
		}
	}
	d, err := s.Take(ctx, "stripe", 10, 3, 1)
	if err != nil || d.Allowed || d.Paused || d.RetryAfter <= 50*time.Millisecond || d.RetryAfter > 100*time.Millisecond {
		t.Fatalf("fourth take: %+v, %v; want refused with RetryAfter in (50ms, 100ms]", d, err)
	}
	if d, err := s.Take(ctx, "maps", 10, 3, 1); err != nil || !d.Allowed {
		t.Fatalf("another key: %+v, %v; want allowed", d, err)
	}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.Contains(k, "app1:{") {
			t.Errorf("key %q lacks the prefix and hash tag", k)
		}
	}
	if _, err := s.Take(ctx, "stripe", 0, 3, 1); err == nil {
		t.Error("a zero rate: no error")
	}
}

// TestPauseIsReadWithTheDecision: a pause makes Take report Paused with
// the time left (the server's clock); a shorter pause set later does not
// shorten it, a longer one lengthens it; it ends by itself.
func TestPauseIsReadWithTheDecision(t *testing.T) {
	s := redisquota.New(newClient(t, startRedis(t).Addr), redisquota.Options{})
	ctx := t.Context()
	if err := s.Pause(ctx, "vendor", time.Now().Add(400*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(ctx, "vendor", time.Now().Add(100*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	d, err := s.Take(ctx, "vendor", 100, 10, 1)
	if err != nil || d.Allowed || !d.Paused || d.RetryAfter < 300*time.Millisecond || d.RetryAfter > 400*time.Millisecond {
		t.Fatalf("paused take: %+v, %v; want paused with 300..400ms left", d, err)
	}
	if err := s.Pause(ctx, "vendor", time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Take(ctx, "vendor", 100, 10, 1); !d.Paused || d.RetryAfter < 900*time.Millisecond {
		t.Fatalf("after a longer pause: %+v; want about 1s left", d)
	}
	if err := s.Pause(ctx, "vendor", time.Now().Add(-time.Second)); err != nil {
		t.Fatalf("a pause in the past: %v, want nothing done", err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		d, err := s.Take(ctx, "vendor", 100, 10, 1)
		if err == nil && d.Allowed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pause did not end: %+v, %v", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTakeHonoursTheContext: a dead Redis fails the decision within the
// caller's deadline.
func TestTakeHonoursTheContext(t *testing.T) {
	srv := startRedis(t)
	s := redisquota.New(newClient(t, srv.Addr), redisquota.Options{})
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.Take(ctx, "k", 1, 1, 1); err == nil {
		t.Fatal("no error with Redis down")
	}
	if took := time.Since(start); took > 50*time.Millisecond+200*time.Millisecond {
		t.Errorf("failed decision took %v, want about the 50ms deadline at most", took)
	}
}
