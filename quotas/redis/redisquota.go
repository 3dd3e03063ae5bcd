// Package redisquota is a middleware.QuotaStore on Redis: the store of
// switchboard's rate limits with scope fleet (rate_limit.scope: fleet),
// given to the registry as factory.Options.Quotas, so that every process
// naming a quota's key shares one limit.
//
// A decision is github.com/go-redis/redis_rate's GCRA (one Lua script,
// atomic on the server, clocked by the server's TIME so the processes'
// clocks do not matter) and, in the same round trip, a PTTL of the
// quota's pause key: a pause a server asked for (rate_limit.respect_server)
// is a key with an expiry, set relative to the server's clock. Both keys
// of a quota share one hash tag, so with a Redis Cluster (any
// redis.UniversalClient: a *redis.Client, *redis.ClusterClient or
// *redis.Ring) they live on one node and the round trip stays one.
//
//	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"},
//		ContextTimeoutEnabled: true, MaxRetries: -1})
//	reg, err := factory.Open(factory.Options{File: "clients.yaml",
//		Quotas: redisquota.New(rdb, redisquota.Options{})})
//
// The module is its own (quotas/redis/go.mod) so that switchboard's main
// module gains no dependency.
package redisquota

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/switchboard-http/switchboard/middleware"
)

// DefaultPrefix is the Prefix an empty Options.Prefix stands for.
const DefaultPrefix = "switchboard:quota:"

// Options configures New. The zero value uses DefaultPrefix.
type Options struct {
	// Prefix is put before every quota's key, so that several
	// applications can share one Redis; "" means DefaultPrefix.
	Prefix string
}

// Store is a middleware.QuotaStore on Redis. Create it with New; the zero
// value is not usable. It is safe for concurrent use and holds no state
// of its own: every decision is the server's.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
}

var _ middleware.QuotaStore = (*Store)(nil)

// New returns a Store on rdb (a *redis.Client, *redis.ClusterClient,
// *redis.Ring or a failover client). Closing rdb is the caller's. Create
// rdb with ContextTimeoutEnabled: true: without it go-redis ignores a
// context's deadline on a hung connection (its ReadTimeout rules, 3s by
// default), and rate_limit.store_timeout cannot bound a decision. With
// MaxRetries: -1 a failed decision fails at once (on_store_error then
// applies) instead of retrying within store_timeout. The Store is safe
// for concurrent use.
func New(rdb redis.UniversalClient, o Options) *Store {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	return &Store{rdb: rdb, prefix: o.Prefix}
}

// keys returns the quota key key's GCRA key (redis_rate puts "rate:"
// before it) and pause key: both carry the hash tag {key}, so they live in
// one Cluster slot.
func (s *Store) keys(key string) (gcra, pause string) {
	tagged := s.prefix + "{" + key + "}"
	return tagged, tagged + ":pause"
}

// limitOf is rate per second as a redis_rate.Limit: one event per
// 1/rate seconds (the script divides the period by Rate, in floating
// point), so fractional rates are exact.
func limitOf(rate float64, burst int) redis_rate.Limit {
	period := time.Duration(math.Round(float64(time.Second) / rate))
	return redis_rate.Limit{Rate: 1, Burst: burst, Period: max(period, time.Nanosecond)}
}

// Take asks the quota key for n tokens at rate per second with burst: one
// round trip running redis_rate's GCRA script and the PTTL of the key's
// pause. A paused key reports Paused and the pause's time left; the
// script has run meanwhile, so an attempt that came during the pause
// spent a token that the pause's end would otherwise have bunched up:
// after a pause the quota resumes at its rate, not with a burst. It is
// safe for concurrent use.
func (s *Store) Take(ctx context.Context, key string, rate float64, burst, n int) (middleware.QuotaDecision, error) {
	if rate <= 0 || burst < 1 || n < 1 {
		return middleware.QuotaDecision{}, fmt.Errorf("redisquota: take %d of quota %q: rate %g and burst %d must be positive", n, key, rate, burst)
	}
	gcra, pause := s.keys(key)
	rt := &withPause{rdb: s.rdb, pause: pause}
	res, err := redis_rate.NewLimiter(rt).AllowN(ctx, gcra, limitOf(rate, burst), n)
	if err != nil {
		return middleware.QuotaDecision{}, fmt.Errorf("redisquota: take from quota %q: %w", key, err)
	}
	if rt.err != nil {
		return middleware.QuotaDecision{}, fmt.Errorf("redisquota: read the pause of quota %q: %w", key, rt.err)
	}
	if rt.left > 0 {
		return middleware.QuotaDecision{Paused: true, RetryAfter: rt.left, Remaining: res.Remaining}, nil
	}
	if res.Allowed >= n {
		return middleware.QuotaDecision{Allowed: true, Remaining: res.Remaining}, nil
	}
	return middleware.QuotaDecision{RetryAfter: max(res.RetryAfter, time.Millisecond), Remaining: res.Remaining}, nil
}

// Pause pauses the quota key until until: a SET NX of its pause key with
// the time left as expiry (relative, so the server's clock rules), then a
// PEXPIRE GT (Redis >= 7) that lengthens, never shortens, a pause already
// set, both in one MULTI. An until not after now does nothing. It is safe
// for concurrent use.
func (s *Store) Pause(ctx context.Context, key string, until time.Time) error {
	d := time.Until(until).Round(time.Millisecond)
	if d <= 0 {
		return nil
	}
	_, pause := s.keys(key)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SetNX(ctx, pause, 1, d)
		p.Do(ctx, "pexpire", pause, strconv.FormatInt(d.Milliseconds(), 10), "gt")
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisquota: pause quota %q: %w", key, err)
	}
	return nil
}

// withPause is the Redis connection redis_rate's Limiter runs its script
// on, for one decision: it sends each EVALSHA or EVAL together with a
// PTTL of the pause key in one pipeline (one round trip) and keeps the
// PTTL's answer. redis_rate reads its script's reply at once, so the
// script cannot be queued in a caller's pipeline; wrapping the connection
// it calls keeps redis_rate's own script and GCRA (nothing rewritten) and
// still reads the pause in the same round trip.
type withPause struct {
	rdb   redis.UniversalClient
	pause string
	left  time.Duration // the pause's time left; <= 0: none
	err   error         // the PTTL's error
}

// pipe runs the script command eval with a PTTL of the pause key.
func (w *withPause) pipe(ctx context.Context, eval func(redis.Pipeliner) *redis.Cmd) *redis.Cmd {
	var cmd *redis.Cmd
	var pttl *redis.DurationCmd
	// Pipelined's error is the first of the commands'; each keeps its own.
	_, _ = w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		pttl = p.PTTL(ctx, w.pause)
		cmd = eval(p)
		return nil
	})
	w.left, w.err = pttl.Val(), pttl.Err()
	return cmd
}

func (w *withPause) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return w.pipe(ctx, func(p redis.Pipeliner) *redis.Cmd { return p.Eval(ctx, script, keys, args...) })
}

func (w *withPause) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return w.pipe(ctx, func(p redis.Pipeliner) *redis.Cmd { return p.EvalSha(ctx, sha1, keys, args...) })
}

func (w *withPause) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return w.rdb.EvalRO(ctx, script, keys, args...)
}

func (w *withPause) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return w.rdb.EvalShaRO(ctx, sha1, keys, args...)
}

func (w *withPause) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return w.rdb.ScriptExists(ctx, hashes...)
}

func (w *withPause) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return w.rdb.ScriptLoad(ctx, script)
}

func (w *withPause) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return w.rdb.Del(ctx, keys...)
}
