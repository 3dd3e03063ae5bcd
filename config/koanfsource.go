package config

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	kmaps "github.com/knadh/koanf/maps"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"
)

// KoanfSource returns a Source named name that reads koanf provider p, with
// parser pa or none. It is KoanfSourceWith(name, p, pa, KoanfOptions{}).
func KoanfSource(name string, p koanf.Provider, pa koanf.Parser) Source {
	return KoanfSourceWith(name, p, pa, KoanfOptions{})
}

// KoanfOptions tune KoanfSourceWith. The zero value nests keys on "." and
// takes the provider's whole tree.
type KoanfOptions struct {
	// Delim separates the levels of a flat key, as koanf.New's delimiter
	// does: with "." (the default when empty) the key
	// "clients.billing.retry.max_retries" is the setting
	// clients → billing → retry → max_retries.
	Delim string
	// Path is the section of the provider's tree that holds the
	// configuration, written with Delim: "switchboard" when the provider
	// returns keys such as "switchboard.clients.billing.timeout" (koanf's
	// etcd and Consul providers keep the key prefix they read). A path that
	// is not in the tree yields an empty layer. "" means the whole tree.
	Path string
}

// KoanfSourceWith returns a Source named name that reads koanf provider p
// afresh on every Read. Name is used in errors and provenance ("set by
// source consul:switchboard/clients.yaml"); make it say where the data is.
//
// koanf providers come in three shapes, and each works:
//
//   - A bytes provider (file, rawbytes, S3, a Consul or Vault key read as a
//     document) with a parser: p.ReadBytes, then pa.Unmarshal. Pass koanf's
//     yaml parser for a clients.yaml kept in the store.
//   - A tree provider (confmap, koanf's etcd and Consul providers reading a
//     prefix of keys, Vault's secret data) with pa nil: p.Read. Its keys
//     may be flat ("clients.billing.retry.max_retries": "5"), nested, or
//     both; flat ones are nested on o.Delim by koanf's maps.Flatten and
//     maps.Unflatten (koanf's own Load merges a provider's map as it is, so
//     a Raw() of it keeps "a.b" as one top-level key, which switchboard
//     would reject as unknown). Values may be text, as stores hold them.
//   - A tree provider holding one document (koanf's etcd provider reading
//     one key, which has no working ReadBytes) with a parser: when
//     p.ReadBytes fails, p.Read is used; if it returns a single key whose
//     value is text or bytes, that value is the document pa parses. After
//     one such read the Source goes to p.Read directly. A Read of any other
//     shape is taken as a tree.
//
// After nesting, o.Path selects the section to use. Because every "." (or
// o.Delim) splits a key, a header name containing one cannot be set through
// such a provider.
//
// When p can watch, as koanf's file, etcd and Consul providers can (a
// method Watch(func(event any, err error)) error), the Source is Watchable:
// every event and every watch error makes a reload due (the reload reports
// the error, if reading fails). Its stop calls p's Unwatch() when p has
// one; otherwise it only stops the notifications, and the provider's own
// goroutine runs on (koanf's etcd provider v2.0.0 has no Unwatch, watches
// with context.Background and never closes its client: its goroutines
// outlive Registry.Close; the module sources/etcd has a Source that does
// not). A provider with no Watch gives a Source that is read at every
// reload but triggers none.
//
// Providers take no context, so a Read cannot be cut short: config.ReadSource
// checks the context before it, no more. The Source is safe for concurrent
// use when p (and pa) are.
func KoanfSourceWith(name string, p koanf.Provider, pa koanf.Parser, o KoanfOptions) Source {
	if o.Delim == "" {
		o.Delim = "."
	}
	s := &koanfSource{name: name, p: p, pa: pa, opts: o}
	if w, ok := p.(koanfWatcher); ok {
		return &watchableKoanfSource{koanfSource: s, w: w}
	}
	return s
}

// koanfWatcher is the watch method of koanf's watching providers.
type koanfWatcher interface {
	Watch(cb func(event any, err error)) error
}

type koanfSource struct {
	name string
	p    koanf.Provider
	pa   koanf.Parser
	opts KoanfOptions
	// viaRead is set once p.ReadBytes failed and p.Read served the
	// document: p is a tree provider used with a parser.
	viaRead atomic.Bool
}

func (s *koanfSource) Name() string { return s.name }

func (s *koanfSource) Read() (map[string]any, error) {
	raw, parsed, err := s.raw()
	if err != nil {
		return nil, err
	}
	if parsed {
		// A document the parser read is nested already, and its keys are
		// the file's: a route pattern or header name may hold the
		// delimiter ("GET /v1/report.csv"), so it is never split.
		if s.opts.Path != "" {
			k := koanf.New(s.opts.Delim)
			if err := k.Load(confmap.Provider(raw, ""), nil); err != nil {
				return nil, err
			}
			return k.Cut(s.opts.Path).Raw(), nil
		}
		return raw, nil
	}
	// A tree of keys: flatten, then nest again: confmap.Provider with a delimiter nests
	// flat keys with maps.Unflatten, which leaves a flat key inside a
	// nested section as it is; flattening everything first covers that.
	cp := kmaps.Copy(raw) // the provider's map is its own; the next steps change keys in place
	kmaps.IntfaceKeysToStrings(cp)
	flat, _ := kmaps.Flatten(cp, nil, s.opts.Delim)
	k := koanf.New(s.opts.Delim)
	if err := k.Load(confmap.Provider(flat, s.opts.Delim), nil); err != nil {
		return nil, err
	}
	if s.opts.Path != "" {
		k = k.Cut(s.opts.Path)
	}
	return k.Raw(), nil
}

// raw returns p's map, by the shape p has (see KoanfSourceWith), and
// whether the parser made it (a document) rather than p (a tree of keys).
func (s *koanfSource) raw() (map[string]any, bool, error) {
	if s.pa == nil {
		mp, err := s.p.Read()
		return mp, false, err
	}
	if !s.viaRead.Load() {
		b, err := s.p.ReadBytes()
		if err == nil {
			tree, err := s.pa.Unmarshal(b)
			return tree, true, ContentError(err)
		}
		mp, rerr := s.p.Read()
		if rerr != nil {
			return nil, false, fmt.Errorf("%w; through Read: %w", err, rerr)
		}
		s.viaRead.Store(true)
		return s.document(mp)
	}
	mp, err := s.p.Read()
	if err != nil {
		return nil, false, err
	}
	return s.document(mp)
}

// document parses the single text value of mp with the parser, or returns
// mp itself when it is not one key holding text.
func (s *koanfSource) document(mp map[string]any) (map[string]any, bool, error) {
	if len(mp) == 0 {
		return nil, false, ContentError(fmt.Errorf("source %s: the provider returned no key to parse (deleted?)", s.name))
	}
	if len(mp) > 1 {
		return mp, false, nil
	}
	var key string
	var v any
	for key, v = range mp {
	}
	var b []byte
	switch x := v.(type) {
	case string:
		b = []byte(x)
	case []byte:
		b = x
	default:
		return mp, false, nil
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil, false, ContentError(fmt.Errorf("key %s is empty", key))
	}
	tree, err := s.pa.Unmarshal(b)
	if err != nil {
		return nil, false, ContentError(fmt.Errorf("key %s: %w", key, err))
	}
	return tree, true, nil
}

type watchableKoanfSource struct {
	*koanfSource
	w koanfWatcher
}

func (s *watchableKoanfSource) Watch(notify func()) (func(), error) {
	var mu sync.Mutex
	on := true
	err := s.w.Watch(func(any, error) {
		mu.Lock()
		defer mu.Unlock()
		if on {
			notify()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watch config source %s: %w", s.name, err)
	}
	stop := func() {
		mu.Lock()
		on = false
		mu.Unlock()
		if u, ok := s.w.(interface{ Unwatch() error }); ok {
			_ = u.Unwatch() // nothing useful to do with it at shutdown
		}
	}
	return stop, nil
}
