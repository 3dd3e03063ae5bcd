package factory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/reload"
)

// ErrClosed is returned by Apply, Reload and Plan after Close, and by every
// request of every client of a closed registry (errors.Is matches it
// through the *url.Error of http.Client), those handed out before Close
// and those Get returns after it alike.
var ErrClosed = errors.New("factory: registry closed")

// ErrRequiredClient is matched (errors.Is) by the error of Open, New, Apply
// and Reload when the config does not define a client of Options.Require.
var ErrRequiredClient = errors.New("factory: a required client is not defined")

// required checks that cfg defines every client of Options.Require.
func (r *Registry) required(cfg config.Config) error {
	var missing []string
	for _, name := range r.opts.Require {
		if _, ok := cfg.Clients[name]; !ok {
			missing = append(missing, strconv.Quote(name))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: the code depends on %s (Options.Require), which the config does not define", ErrRequiredClient, strings.Join(missing, ", "))
}

// ErrNoSource is returned by Reload on a registry made by New, which has no
// layers to re-read; use Apply.
var ErrNoSource = errors.New("factory: registry has no config source to reload; use Apply")

// Registry hands out one stable *http.Client per name and swaps the
// pipeline behind each of them when the configuration changes. Get and the
// clients it returns are safe for concurrent use and lock-free on their hot
// paths. After Close every client fails its requests with ErrClosed. The
// zero value is not usable: make one with Open or New.
type Registry struct {
	opts    Options
	log     *slog.Logger
	loader  *config.Loader // nil for New
	sources *sourceSet     // the loader's Sources, with their last good snapshots

	// ctx is the context of reload loads; Close cancels it, which ends the
	// reads of Sources that take a context (config.ContextSource).
	ctx    context.Context
	cancel context.CancelFunc

	// reloading serialises reloads and Applies, load included; reloads
	// coalesces the Reloads asked for while one runs.
	reloading sync.Mutex
	reloads   coalescer
	told      reportQueue // outcomes of attempts, told outside every lock

	// gen is the serving generation; clients holds every handed-out client
	// by name. Both are replaced, never changed, so readers need no lock.
	gen     atomic.Pointer[generation]
	clients atomic.Pointer[map[string]*http.Client]

	mu          sync.Mutex // serialises every writer below and of gen/clients
	names       []string   // client name by pipeline index
	warned      map[string]bool
	closed      bool
	lastReload  time.Time // when the serving generation was committed
	lastErr     error
	reloadLog   reloadRing // the last attempts, for Status.Reloads
	lastHash    string
	watcher     *reload.Watcher
	due         chan struct{}     // a reload is due (watchers → reloader)
	srcDebounce *reload.Debouncer // the Sources' notifications → due
	srcStops    []func()          // stop the Sources' watches
	stop        chan struct{}     // nil when nothing watches
	stopped     chan struct{}

	drain drainer // retired base transports; has its own lock
}

// generation is one consistent set of pipelines, indexed like Registry.names.
type generation struct {
	num   uint64
	cfg   config.Config
	pipes []*pipeline
}

// Open loads every layer named by o (built-in defaults, o.File, o.Sources,
// env with o.EnvPrefix, o.Flags), validates the result, builds every client
// and, unless o.NoWatch, starts watching the file, every secret and TLS
// file the config names (whichever layer names it) and every o.Sources
// that is a config.Watchable. A bad config, an unreadable Source, or a watch
// that cannot start, is an error and nothing runs. Close the registry when
// done.
//
// ctx bounds the initial load: when it ends before every layer was read,
// Open returns its error (context.Cause) at once. A Source that implements
// config.ContextSource gets ctx and should stop reading; the Read of one
// that does not runs on until it returns, and nothing of Open is left
// running after that. ctx does not control the registry's life: the
// watcher runs until Close.
func Open(ctx context.Context, o Options) (*Registry, error) {
	if err := context.Cause(ctx); err != nil {
		return nil, fmt.Errorf("factory: open: %w", err)
	}
	sources := newSourceSet(o.Sources)
	l := &config.Loader{File: o.File, Sources: sources.wrapped(), EnvPrefix: o.EnvPrefix, Flags: o.Flags, Environ: o.Environ, Section: o.Section}
	r := newRegistry(o)
	r.loader, r.sources = l, sources
	// Every file is watched from before it is read: an edit made while Open
	// reads its inputs triggers a reload once the first generation serves.
	// Whatever the layers, the files the config names (token, TLS) are
	// watched too, so watching starts unless NoWatch.
	if !o.NoWatch {
		if err := r.startWatching(); err != nil {
			r.Close()
			return nil, err
		}
	}
	cfg, err := loadWithin(ctx, l)
	if err == nil {
		err = r.watchFiles(cfg.Files) // before the build reads them again
	}
	if err == nil {
		err = r.first(cfg)
	}
	if err == nil {
		if len(cfg.EnvIgnored) > 0 {
			r.log.Debug("env variables under the prefix are not switchboard's (only "+o.EnvPrefix+"DEFAULTS__… and "+o.EnvPrefix+"CLIENTS__… are): ignored",
				"names", cfg.EnvIgnored)
		}
		// From now on an override of a client the config stops defining
		// is dropped with a WARN (see load), not a rejected reload. No
		// reload runs before Open returns, so nothing reads l meanwhile.
		l.DropUndefinedClients = true
		sources.open(r.log)
		err = r.watchSources()
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	r.startReloader()
	return r, nil
}

// loadWithin runs l.LoadContext(ctx) and returns its result, or ctx's
// error as soon as ctx ends. The load runs on a goroutine of its own that
// ends when the load does (a Source's Read that ignores ctx returns).
func loadWithin(ctx context.Context, l *config.Loader) (config.Config, error) {
	type result struct {
		cfg config.Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- result{err: fmt.Errorf("loading config panicked: %v", v)}
			}
		}()
		cfg, err := l.LoadContext(ctx)
		done <- result{cfg, err}
	}()
	select {
	case res := <-done:
		return res.cfg, res.err
	case <-ctx.Done():
		return config.Config{}, fmt.Errorf("factory: open: initial load: %w", context.Cause(ctx))
	}
}

// New builds a registry from cfg, with no file, env or flag layer and no
// watcher: o.File, o.NoWatch, o.EnvPrefix, o.Flags and o.Sources are
// ignored. Change its configuration with Apply.
func New(cfg config.Config, o Options) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := newRegistry(o)
	if err := r.first(cfg); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// newRegistry returns a registry of o serving no client yet.
func newRegistry(o Options) *Registry {
	r := &Registry{opts: o, log: o.Logger, warned: map[string]bool{}, sources: newSourceSet(nil)}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.reloads.fn = r.reload
	r.drain.grace, r.drain.log = o.DrainGrace, r.log
	empty := map[string]*http.Client{}
	r.clients.Store(&empty)
	r.gen.Store(&generation{})
	return r
}

// first commits the registry's first generation, from cfg.
func (r *Registry) first(cfg config.Config) error {
	if err := r.required(cfg); err != nil {
		return err
	}
	_, g, plans, _, err := r.commit(cfg, false)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.reloadLog.add(ReloadRecord{Time: r.lastReload, Generation: g.num, Changed: changedClients(sortedPlans(plans))})
	r.mu.Unlock()
	for _, p := range g.pipes {
		r.warnInsecure(p)
	}
	r.warnHooks(cfg)
	return nil
}

// Get returns the client called name: the same pointer on every call for the
// registry's life, so callers may keep it. A name the config does not define
// gets a client that follows `defaults` (and its own section as soon as a
// reload adds one), and one WARN is logged; Lookup tells the two apart. Get
// takes no lock and allocates nothing once the name has been seen.
//
// The returned *http.Client is shared: every caller of Get(name) holds the
// same one, for the registry's life. Set no field on it (Timeout,
// Transport, Jar, CheckRedirect): the change would reach every other
// caller, race with them, and bypass the pipeline the registry swaps on
// reload. To add behaviour, wrap it instead (a client of your own whose
// Transport calls this client's Transport, or Options.Hooks) or set a
// per-request deadline with the request's context.
func (r *Registry) Get(name string) *http.Client {
	if c, ok := (*r.clients.Load())[name]; ok {
		return c
	}
	return r.add(name)
}

// Lookup returns the client called name and true when the current config
// defines it, and nil and false otherwise. It never creates a client.
func (r *Registry) Lookup(name string) (*http.Client, bool) {
	if _, ok := r.gen.Load().cfg.Clients[name]; !ok {
		return nil, false
	}
	return r.Get(name), true
}

// Names returns the names of the clients the current config defines, sorted.
func (r *Registry) Names() []string {
	clients := r.gen.Load().cfg.Clients
	out := make([]string, 0, len(clients))
	for name := range clients {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// add creates the client of a name first seen by Get. On a closed
// registry it builds nothing: the client fails with ErrClosed.
func (r *Registry) add(name string) *http.Client {
	// Records are logged once the lock is released: a log handler may call
	// the registry.
	var logs []func()
	defer func() {
		for _, f := range logs {
			f()
		}
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := (*r.clients.Load())[name]; ok {
		return c
	}
	g := r.gen.Load()
	cc, defined := g.cfg.Client(name)
	if !defined && !r.warned[name] {
		r.warned[name] = true
		logs = append(logs, func() { r.log.Warn("client not defined in config; it follows defaults", "client", name) })
	}
	in := clientInput{cfg: cc, defined: defined}
	var p *pipeline
	if r.closed {
		p = &pipeline{name: name, in: in, gen: g.num, rt: errTransport{ErrClosed}}
	} else {
		err := func() error {
			m, err := resolve(sectionOf(name, defined), cc, r.opts.Base == nil, fileCache{})
			if err != nil {
				return err
			}
			in.credDigest, in.tlsDigest = m.credDigest, m.tlsDigest
			plans, groups := planAll([]string{name}, []*serving{nil}, []clientInput{in}, groupViewOf(g.pipes), r.opts.Base != nil)
			p, _, err = r.build(name, in, m, plans[0], nil, g.num, newGroupTable(g.pipes, groups))
			return err
		}()
		if err != nil {
			logs = append(logs, func() {
				r.log.Error("building client failed; its requests fail until a reload fixes it", "client", name, "error", err)
			})
			p = &pipeline{name: name, in: in, gen: g.num, rt: errTransport{err}}
		} else {
			built := p
			logs = append(logs, func() { r.warnInsecure(built) })
		}
	}
	ng := &generation{num: g.num, cfg: g.cfg, pipes: append(g.pipes[:len(g.pipes):len(g.pipes)], p)}
	r.names = append(r.names, name)
	c := r.newClient(len(r.names) - 1)
	r.gen.Store(ng)
	r.publish(map[string]*http.Client{name: c})
	return c
}

// publish adds clients to the name→client map (copy on write). r.mu held.
func (r *Registry) publish(add map[string]*http.Client) {
	if len(add) == 0 {
		return
	}
	old := *r.clients.Load()
	m := make(map[string]*http.Client, len(old)+len(add))
	for k, v := range old {
		m[k] = v
	}
	for k, v := range add {
		m[k] = v
	}
	r.clients.Store(&m)
}

// newClient makes the stable client for pipeline index i.
func (r *Registry) newClient(i int) *http.Client {
	t := &clientTransport{r: r, i: i}
	return &http.Client{Transport: t, CheckRedirect: t.checkRedirect}
}

// clientTransport is the Transport of a handed-out client: it runs each
// request on the pipeline its client has in the serving generation.
type clientTransport struct {
	r *Registry
	i int
}

func (t *clientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.r.gen.Load().pipes[t.i].rt.RoundTrip(req)
}

// checkRedirect follows transport.max_redirects of the serving pipeline:
// 0 returns the redirect response itself.
func (t *clientTransport) checkRedirect(req *http.Request, via []*http.Request) error {
	limit := t.r.gen.Load().pipes[t.i].in.cfg.Transport.MaxRedirects
	if limit == 0 {
		return http.ErrUseLastResponse
	}
	if len(via) > limit {
		return fmt.Errorf("stopped after %d redirects (transport.max_redirects)", limit)
	}
	return nil
}

// Close stops the watcher, the Sources' watches and every goroutine and
// timer the registry started, and closes idle connections, those of
// transports still draining too. From then on every client, handed out
// before or after, fails its requests with ErrClosed and builds no
// connection; a request already running finishes, and its connection is
// closed when it ends. Apply, Reload and Plan return ErrClosed. A reload
// blocked in a Source's Read delays Close until that Read returns (at once
// for a config.ContextSource, whose context Close cancels). Close is
// idempotent and safe for concurrent use.
func (r *Registry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.cancel()
	r.mu.Unlock()
	// Let an attempt in progress end (a Source read that ignores the
	// context included): nothing it does may follow Close.
	r.reloading.Lock()
	r.reloading.Unlock()
	r.mu.Lock()
	old := r.gen.Load()
	shut := &generation{num: old.num, cfg: old.cfg, pipes: make([]*pipeline, len(old.pipes))}
	for i, p := range old.pipes {
		shut.pipes[i] = p.closed()
	}
	r.gen.Store(shut)
	w, deb, stop, stopped, srcStops := r.watcher, r.srcDebounce, r.stop, r.stopped, r.srcStops
	r.mu.Unlock()

	var err error
	for _, s := range srcStops {
		s()
	}
	if w != nil {
		err = w.Close()
	}
	if deb != nil {
		deb.Close()
	}
	if stop != nil {
		close(stop)
		<-stopped
	}
	// Every transport is retired: its idle connections close now, and those
	// of requests still running when they end.
	r.retire(old, shut)
	r.drain.close()
	return err
}

// isClosed reports whether Close was called.
func (r *Registry) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}
