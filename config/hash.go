package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/switchboard-http/switchboard/middleware"
)

// Hash returns a stable digest (64 hex digits of SHA-256) of every effective
// setting of c: equal settings give equal hashes in every process and
// version of Go, and any change to any key, header or list item changes it.
// A nil and an empty map hash alike. A nil retry.retryable_status or
// retry.retryable_methods hashes as the default list it means to the retry
// layer, and an empty one ("none") differs from both (see listDefaults). The contents of referenced
// files (tokens, certificates) are not part of it, only their names. Use it
// to tell whether a client changed across reloads and to show in status.
// Secret values only enter the digest, never the output. Hash is safe for
// concurrent use.
func (c ClientConfig) Hash() string {
	c = withDefaults(c)
	w := hashers.Get().(*leafHasher)
	w.buf = w.buf[:0]
	v := reflect.ValueOf(&c).Elem()
	for _, l := range sortedKeys {
		w.leaf(l.path, l.valueOf(v))
	}
	// Routes, patterns sorted, each key under its RouteKey; a client
	// without routes hashes as it always did.
	for _, p := range slices.Sorted(maps.Keys(c.Routes)) {
		rc := c.Routes[p].Client(ClientConfig{})
		rc.Retry = listDefaults(rc.Retry)
		rv := reflect.ValueOf(&rc).Elem()
		for _, l := range sortedKeys {
			if routeAllowed(l.path) {
				w.leaf(RouteKey(p, l.path), l.valueOf(rv))
			}
		}
	}
	sum := sha256.Sum256(w.buf)
	if cap(w.buf) <= 64<<10 { // a client with huge maps does not pin its buffer
		clear(w.buf) // they held secret values
		clear(w.val)
		hashers.Put(w)
	}
	return hex.EncodeToString(sum[:])
}

// hashers recycles the buffers of Hash: a reload of many clients hashes
// each, and the buffers were most of the bytes it allocated.
var hashers = sync.Pool{New: func() any {
	return &leafHasher{buf: make([]byte, 0, 2048), val: make([]byte, 0, 128)}
}}

// leafHasher writes the leaves of a client into buf, each as its path and
// its canonical value, each with its length (as writeHashField does), then
// a newline, so that SHA-256 runs once over the whole. It reads the struct
// directly and reuses its buffers: hashing a client costs a handful of
// allocations rather than several per key.
type leafHasher struct {
	buf []byte // everything written so far
	val []byte // the current leaf's value
	enc canonicalEncoder
}

// leaf writes one leaf, its path and its value in the canonical encoding.
func (w *leafHasher) leaf(path string, v reflect.Value) {
	val := w.enc.value(w.val[:0], v, true)
	w.val = val
	b := strconv.AppendInt(w.buf, int64(len(path)), 10)
	b = append(append(b, ':'), path...)
	b = strconv.AppendInt(b, int64(len(val)), 10)
	b = append(append(b, ':'), val...)
	w.buf = append(b, '\n')
}

// The lists a nil retryable_status, retryable_methods, coalesce.methods
// or coalesce.vary_headers means; read-only.
var (
	defaultRetryableStatus  = middleware.DefaultRetryableStatus()
	defaultRetryableMethods = middleware.IdempotentMethods()
	defaultCoalesceMethods  = middleware.DefaultCoalesceMethods()
	defaultCoalesceVary     = middleware.DefaultCoalesceVaryHeaders()

	defaultIdempotencyMethods = middleware.DefaultIdempotencyKeyMethods()
)

// listDefaults returns r with a nil RetryableStatus, RetryableMethods or
// IdempotencyKey.Methods replaced by the default list that middleware.Retry
// reads nil as, and an IdempotencyKey.Header of "" by the header "" means,
// so that Hash and Equal judge what the retry layer will do: nil and the
// default list are alike, and an empty list, which retries (or keys)
// nothing, differs from both (a code-built change from nil to []int{} is a
// change).
func listDefaults(r middleware.RetrySettings) middleware.RetrySettings {
	if r.RetryableStatus == nil {
		r.RetryableStatus = defaultRetryableStatus
	}
	if r.RetryableMethods == nil {
		r.RetryableMethods = defaultRetryableMethods
	}
	if r.IdempotencyKey.Methods == nil {
		r.IdempotencyKey.Methods = defaultIdempotencyMethods
	}
	if r.IdempotencyKey.Header == "" {
		r.IdempotencyKey.Header = middleware.DefaultIdempotencyKeyHeader
	}
	return r
}

// withDefaults returns c with the blocks whose zero fields mean a default
// (listDefaults, coalesceListDefaults, a deadline.format of "", which
// middleware.PropagateDeadline reads as ms) filled in: the one place Hash,
// Equal and ChangedKeys normalise a client's own blocks. Routes are not
// touched here.
func withDefaults(c ClientConfig) ClientConfig {
	c.Retry, c.Coalesce = listDefaults(c.Retry), coalesceListDefaults(c.Coalesce)
	if c.Deadline.Format == "" {
		c.Deadline.Format = middleware.DeadlineMillis
	}
	return c
}

// coalesceListDefaults is listDefaults for the coalesce block: a nil
// methods or vary_headers is the default list middleware.Coalesce reads
// it as.
func coalesceListDefaults(s middleware.CoalesceSettings) middleware.CoalesceSettings {
	if s.Methods == nil {
		s.Methods = defaultCoalesceMethods
	}
	if s.VaryHeaders == nil {
		s.VaryHeaders = defaultCoalesceVary
	}
	return s
}

// withListDefaults returns c with listDefaults applied to its retry
// settings and to each route's (the routes map is copied, c's is not
// changed): the settings as Hash and Equal judge them.
func withListDefaults(c ClientConfig) ClientConfig {
	c = withDefaults(c)
	if c.Routes != nil {
		routes := make(map[string]RouteConfig, len(c.Routes))
		for p, r := range c.Routes {
			r.Retry = listDefaults(r.Retry)
			routes[p] = r
		}
		c.Routes = routes
	}
	return c
}

// writeHashField writes each part to h with its length, so that no two
// different sequences of parts write the same bytes.
func writeHashField(h hash.Hash, parts ...string) {
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	h.Write([]byte{'\n'})
}

// referencedFiles lists the config file and every TLS and secret file named
// by the defaults or any client (cfg.ReferencedFiles), each once: the files
// whose change should trigger a reload.
func referencedFiles(file string, cfg Config) []string {
	if file == "" {
		return cfg.ReferencedFiles()
	}
	return append([]string{file}, slices.DeleteFunc(cfg.ReferencedFiles(), func(p string) bool { return p == file })...)
}

// ReferencedFiles returns every secret and TLS file (the *_file keys) that
// the defaults or a client of c names, sorted, each once; nil when it
// names none. It reads c alone, so a Config built in code names its files
// as a loaded one does (Files adds the config file). It is safe for
// concurrent use.
func (c Config) ReferencedFiles() []string {
	var named []string
	for _, cc := range append([]ClientConfig{c.Defaults}, slices.Collect(maps.Values(c.Clients))...) {
		cv := reflect.ValueOf(&cc).Elem()
		for _, l := range keyTable {
			if l.file && l.valueOf(cv).String() != "" {
				named = append(named, l.valueOf(cv).String())
			}
		}
	}
	slices.Sort(named)
	return slices.Compact(named)
}

// Equal reports whether c and o hold the same settings, without Hash's
// buffers and digest: when it reports true, Hash reports the same digest for both,
// except that Equal compares floats as numbers (-0 equals 0; NaN equals
// nothing), where Hash tells -0 from 0. As in Hash, a nil and an empty map
// are alike, and a nil retry list equals its default list but not an empty
// one. It compares every key of the key table, then the routes. It is safe
// for concurrent use.
func (c ClientConfig) Equal(o ClientConfig) bool {
	c, o = withDefaults(c), withDefaults(o)
	cv, ov := reflect.ValueOf(&c).Elem(), reflect.ValueOf(&o).Elem()
	// keyTable is in declaration order, so a block's keys come together:
	// each block is looked up once, not once per key.
	var parent []int
	cb, ob := cv, ov
	for _, l := range keyTable {
		n := len(l.index) - 1
		if !slices.Equal(l.index[:n], parent) {
			parent = l.index[:n]
			cb, ob = cv.FieldByIndex(parent), ov.FieldByIndex(parent)
		}
		if !leafEqual(l.kind, cb.Field(l.index[n]), ob.Field(l.index[n])) {
			return false
		}
	}
	return routesEqual(c.Routes, o.Routes)
}
