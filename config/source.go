package config

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"slices"
	"time"
)

// Source is a layer of configuration kept somewhere other than the file,
// the environment or the flags: a key-value store (Consul, etcd), a secret
// store (Vault), an object store (S3), a service of the application's own.
// Loader.Sources are layered above the file and below the env, in order,
// on the whole tree like every layer, so a fleet can keep its shared
// settings in one store and still override them per process.
//
// Read returns the source's current tree, shaped like the YAML file, with
// nested maps (not flat "a.b" keys):
//
//	{"defaults": {"timeout": "10s"},
//	 "clients":  {"billing": {"retry": {"max_retries": 5}}}}
//
// Leaves take the values YAML decodes to (string, int, float64, bool, a
// []any list) and, for any key, text as env values have it ("5", "2s",
// "502,503"), since key-value stores hold strings. The tree is checked like
// the file: unknown keys, wrong types and bad values are *FieldErrors with
// the full key path and SetBy "source <Name>", and Provenance records
// Origin{Layer: LayerSource, Name: Name()}. A Read error fails the Load;
// a factory.Registry reloading then serves the Source's last good snapshot
// instead. Wrap an error about the content itself (a document that does
// not parse) with ContentError, so a registry can tell it from an
// unreachable store: it rejects the reload, as invalid content does. A
// tree must not change after Read returned it: the registry keeps it as
// that snapshot.
//
// Name identifies the source in errors and provenance; it should be short
// and stable ("consul", "etcd:/switchboard"). Read is called on every Load,
// possibly from several goroutines at once: it must be safe for concurrent
// use, and its result is not changed by the Loader. KoanfSource adapts any
// koanf.Provider. A source that can tell when it changed implements
// Watchable too.
type Source interface {
	Name() string
	Read() (map[string]any, error)
}

// ContextSource is implemented by a Source whose Read can be bounded by a
// context: Loader.LoadContext calls ReadContext in place of Read, and it
// should return soon after ctx ends, with an error that wraps ctx's. A
// Source that talks to a server (etcd, Consul) should implement it, so
// that factory.Open's context bounds the first read and Registry.Close
// ends a read that hangs. The rules of Read apply otherwise.
type ContextSource interface {
	Source
	ReadContext(ctx context.Context) (map[string]any, error)
}

// ErrSourceContent is matched (errors.Is) by a Source's Read error that
// says the store answered, but with content that is no tree: a document
// that does not parse. A store that cannot be reached is a different
// failure. factory.Registry rejects a reload on such an error like one on a
// bad value (the last good config serves, Status().LastError says why,
// OnReload and config.rejected report it), where an unreachable store
// makes it serve the Source's last good snapshot instead. Sources make
// such errors with ContentError.
var ErrSourceContent = errors.New("config source content is not a valid tree")

// ContentError returns err marked as bad content (see ErrSourceContent):
// its message is err's, and it matches both err and ErrSourceContent.
// ContentError(nil) is nil.
func ContentError(err error) error {
	if err == nil {
		return nil
	}
	return contentError{err}
}

type contentError struct{ err error }

func (e contentError) Error() string   { return e.err.Error() }
func (e contentError) Unwrap() []error { return []error{e.err, ErrSourceContent} }

// ReadSource reads src under ctx: through ReadContext when src is a
// ContextSource, else through Read once ctx is checked (Read itself cannot
// be stopped). A panic in the Source is returned as an error.
func ReadSource(ctx context.Context, src Source) (tree map[string]any, err error) {
	defer func() {
		if v := recover(); v != nil {
			tree, err = nil, fmt.Errorf("read panicked: %v", v)
		}
	}()
	if cs, ok := src.(ContextSource); ok {
		return cs.ReadContext(ctx)
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return src.Read()
}

// Watchable is implemented by a Source that can tell when its content
// changed. Watch starts watching and calls notify, from any goroutine and
// as often as the source likes (a registry debounces and skips unchanged
// content), each time a reload is due; it returns a stop func that ends
// the watch, after which notify is not called again, or an error when
// watching cannot start. factory.Open calls Watch on each of its Sources
// that implements it, unless Options.NoWatch, and stop on Close. stop must
// be safe to call once from any goroutine.
type Watchable interface {
	Watch(notify func()) (stop func(), err error)
}

// sourceLayer reads src and checks its tree like the file's. It returns the
// canonical tree and the client names it defines; the error is a
// source-level one (Read failed or panicked), naming the source.
func (st *loadState) sourceLayer(src Source, ih hash.Hash) (tree map[string]any, clients []string, err error) {
	name := src.Name()
	raw, err := ReadSource(st.ctx, src)
	if err != nil {
		return nil, nil, fmt.Errorf("config source %s: %w", name, err)
	}
	w := &fileWalker{st: st, layer: LayerSource, name: name}
	doc := normalize(raw).(map[string]any)
	if st.section != "" {
		// A store may hold only the application's keys: no section, nothing.
		doc, _ = sectionOf(doc, st.section)
	}
	tree, clients = w.top(doc)
	// The checked tree, in the canonical encoding of Hash: an empty list
	// or map differs from an absent key. A tree with a bad value fails
	// the load, so nothing it dropped could hide a change.
	writeHashField(ih, "source", name, string(canonicalTree(tree)))
	return tree, clients, nil
}

// normalize returns v with Go types a Source may use turned into the ones
// YAML decodes to: every map into map[string]any, every slice into []any,
// sized integers into int, durations into their text. v is not changed.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalize(e)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case []int:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case time.Duration:
		return x.String()
	case int8:
		return int(x)
	case int16:
		return int(x)
	case int32:
		return int(x)
	case uint8:
		return int(x)
	case uint16:
		return int(x)
	case uint32:
		return int64(x)
	case uint:
		return uint64(x)
	case float32:
		return float64(x)
	}
	return v
}

// mergeNames returns the sorted union of two sorted name lists.
func mergeNames(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
