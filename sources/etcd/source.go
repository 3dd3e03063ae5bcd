package etcdsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	kmaps "github.com/knadh/koanf/maps"
	"github.com/knadh/koanf/parsers/yaml"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchboard-http/switchboard/config"
)

// DefaultReadTimeout bounds each read when Options.ReadTimeout is zero. A
// healthy etcd answers in milliseconds; while it is down, a reload due to
// a file edit waits this long before it goes on with etcd's last good
// snapshot.
const DefaultReadTimeout = 2 * time.Second

// Options tune a Source. The zero value is ready to use.
type Options struct {
	// Name replaces the Source's name in errors, provenance and status;
	// "" means "etcd:" followed by the key or prefix.
	Name string
	// ReadTimeout bounds each read on top of the caller's context. Zero
	// means DefaultReadTimeout; a negative value means no bound but the
	// caller's context.
	ReadTimeout time.Duration
	// AllowMissing makes an absent key (or a prefix with no key under it)
	// an empty layer; false makes it an error naming the key, so that a
	// typo in the key does not pass for "no shared settings" (at Open, Open
	// fails; at a reload, the reload is rejected).
	AllowMissing bool
	// Serializable reads from the member the client is connected to
	// without a quorum round trip (clientv3.WithSerializable): a read still
	// answers while the cluster has lost its quorum, possibly with older
	// data. False reads linearizably, etcd's default.
	Serializable bool
	// Logger receives one WARN each time the watch fails and is
	// re-established; nil means slog.Default().
	Logger *slog.Logger
}

// Watch backoff: the first wait before a failed watch is re-established,
// doubling up to the maximum, back to the minimum once a watch delivers.
const (
	minWatchBackoff = 100 * time.Millisecond
	maxWatchBackoff = 5 * time.Second
)

// Source is a config.Source, config.ContextSource and config.Watchable that
// reads one etcd key holding YAML (Key) or the keys under a prefix
// (Prefix). Its zero value is not usable; make one with Key or Prefix.
// This type is concurrency safe.
type Source struct {
	cli    *clientv3.Client
	key    string // the key, or the prefix
	prefix bool
	name   string
	opts   Options
	log    *slog.Logger
	// rev is the highest store revision a read has seen: a watch started
	// after it misses no change.
	rev atomic.Int64
}

// Key returns a Source that reads key, whose value is a YAML document
// shaped like clients.yaml, through cli. cli stays the caller's: close it
// after the registry that uses the Source.
func Key(cli *clientv3.Client, key string, o Options) *Source {
	return newSource(cli, key, false, o)
}

// Prefix returns a Source that reads every key under prefix through cli,
// one setting per key: the rest of the key after prefix is the setting's
// path, its levels separated by "/" or "." (leading "/" ignored), and the
// value is its text. etcd matches prefixes byte by byte, so end prefix
// with its separator: "/switchboard/" does not also read
// "/switchboard-old/...". cli stays the caller's.
func Prefix(cli *clientv3.Client, prefix string, o Options) *Source {
	return newSource(cli, prefix, true, o)
}

func newSource(cli *clientv3.Client, key string, prefix bool, o Options) *Source {
	s := &Source{cli: cli, key: key, prefix: prefix, opts: o, name: o.Name, log: o.Logger}
	if s.name == "" {
		s.name = "etcd:" + key
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.opts.ReadTimeout == 0 {
		s.opts.ReadTimeout = DefaultReadTimeout
	}
	return s
}

// Name returns Options.Name, or "etcd:" and the key or prefix.
func (s *Source) Name() string { return s.name }

// Read reads the key (or prefix) under Options.ReadTimeout alone.
func (s *Source) Read() (map[string]any, error) {
	return s.ReadContext(context.Background())
}

// errReadTimeout is the cause of a read's context when ReadTimeout ends it.
var errReadTimeout = errors.New("read timeout")

// ReadContext reads the key (or prefix) with one Get bounded by ctx and
// Options.ReadTimeout, and returns its tree. Errors name the key; one cut
// short by ctx or the timeout wraps context.DeadlineExceeded or ctx's
// error.
func (s *Source) ReadContext(ctx context.Context) (map[string]any, error) {
	if s.cli == nil {
		return nil, fmt.Errorf("%s: no etcd client", s.what())
	}
	if s.opts.ReadTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.opts.ReadTimeout, errReadTimeout)
		defer cancel()
	}
	var opts []clientv3.OpOption
	if s.prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	if s.opts.Serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	resp, err := s.cli.Get(ctx, s.key, opts...)
	if err != nil {
		if context.Cause(ctx) == errReadTimeout {
			return nil, fmt.Errorf("%s: no answer within %v: %w", s.what(), s.opts.ReadTimeout, err)
		}
		return nil, fmt.Errorf("%s: %w", s.what(), err)
	}
	s.saw(resp.Header.GetRevision())
	if len(resp.Kvs) == 0 {
		if s.opts.AllowMissing {
			return map[string]any{}, nil
		}
		// The store answered: a deleted key is a bad put, not an outage.
		if s.prefix {
			return nil, config.ContentError(fmt.Errorf("%s: no key under it", s.what()))
		}
		return nil, config.ContentError(fmt.Errorf("%s: not found", s.what()))
	}
	if s.prefix {
		return s.tree(resp)
	}
	return s.document(resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

// what names the key or prefix for error messages.
func (s *Source) what() string {
	if s.prefix {
		return "etcd prefix " + s.key
	}
	return "etcd key " + s.key
}

// saw records rev as seen by a read.
func (s *Source) saw(rev int64) {
	for {
		old := s.rev.Load()
		if rev <= old || s.rev.CompareAndSwap(old, rev) {
			return
		}
	}
}

// document parses one key's YAML value; a parse error is a
// config.ContentError, so a registry rejects it as a bad put rather than
// riding it out as an outage.
func (s *Source) document(b []byte, rev int64) (map[string]any, error) {
	if strings.TrimSpace(string(b)) == "" {
		// Rejected like an empty file: a put of "" (a missing file in
		// `etcdctl put k "$(cat f)"`) would silently drop the shared tuning.
		if s.opts.AllowMissing {
			return map[string]any{}, nil
		}
		return nil, config.ContentError(fmt.Errorf("%s (revision %d) is empty", s.what(), rev))
	}
	tree, err := yaml.Parser().Unmarshal(b)
	if err != nil {
		return nil, config.ContentError(fmt.Errorf("%s (revision %d): %w", s.what(), rev, err))
	}
	return tree, nil
}

// tree nests the keys under the prefix into one tree, with koanf's
// maps.Unflatten. A key that is both a setting and a section of others
// ("a/b" and "a/b/c") is an error naming both. Errors about the keys are
// config.ContentError: a bad put, rejected as such by a registry.
func (s *Source) tree(resp *clientv3.GetResponse) (map[string]any, error) {
	flat := make(map[string]any, len(resp.Kvs))
	from := make(map[string]string, len(resp.Kvs)) // dotted path → etcd key
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		rest := strings.TrimLeft(strings.TrimPrefix(key, s.key), "/")
		path := strings.ReplaceAll(rest, "/", ".")
		if path == "" || slices.Contains(strings.Split(path, "."), "") {
			return nil, config.ContentError(fmt.Errorf("%s: key %s: want a setting path after the prefix, like clients/billing/timeout", s.what(), key))
		}
		flat[path] = string(kv.Value)
		from[path] = key
	}
	for path := range flat {
		for i := range len(path) {
			if path[i] != '.' {
				continue
			}
			if other, ok := from[path[:i]]; ok {
				return nil, config.ContentError(fmt.Errorf("%s: key %s holds a value, so key %s cannot be under it", s.what(), other, from[path]))
			}
		}
	}
	return kmaps.Unflatten(flat, "."), nil
}

// The Source is a config.ContextSource and a config.Watchable.
var (
	_ config.ContextSource = (*Source)(nil)
	_ config.Watchable     = (*Source)(nil)
)
