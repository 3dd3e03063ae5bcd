package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// legacyHash is Hash as it was computed through toTree and fmt, kept to
// prove that the direct, field-by-field Hash writes the same bytes: digests
// shown in status and stored by operators did not change.
func legacyHash(c ClientConfig) string {
	h := sha256.New()
	tree := toTree(c)
	for _, f := range sortedKeys {
		rel := f.path
		v := lookupTree(tree, rel)
		var s string
		switch x := v.(type) {
		case time.Duration:
			s = strconv.FormatInt(int64(x), 10)
		case float64:
			s = strconv.FormatFloat(x, 'g', -1, 64)
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				s += strconv.Quote(k) + ":" + strconv.Quote(x[k].(string)) + ","
			}
		case string:
			s = strconv.Quote(x)
		case []string:
			for _, e := range x {
				s += strconv.Quote(e) + ","
			}
		default:
			s = fmt.Sprint(x)
		}
		writeHashField(h, rel, s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestHashMatchesLegacyHash(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *ClientConfig)
	}{
		{"defaults", func(*ClientConfig) {}},
		{"zero", func(c *ClientConfig) { *c = ClientConfig{} }},
		{"headers", func(c *ClientConfig) { c.Headers = map[string]string{"b": "2", "A": "1\"\n", "é": ""} }},
		{"lists", func(c *ClientConfig) {
			c.Retry.RetryableStatus = []int{500, -1, 429}
			c.Retry.RetryableMethods = []string{"GET", "a,b", ""}
		}},
		{"empty lists", func(c *ClientConfig) { c.Retry.RetryableStatus, c.Retry.RetryableMethods = []int{}, []string{} }},
		{"floats", func(c *ClientConfig) {
			c.Retry.Budget.Ratio = 1.0 / 3
			c.RateLimit.RequestsPerSecond = 1e21
			c.CircuitBreaker.FailureRateThreshold = -0.0
		}},
		{"scalars", func(c *ClientConfig) {
			c.Timeout = -time.Nanosecond
			c.Transport.ForceHTTP2 = false
			c.Transport.MaxConnsPerHost = 1 << 40
			c.Auth.BearerToken = "secret"
			c.TLS.ServerName = "x"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.mutate(&c)
			// Hash reads a nil retry or coalesce list as its default
			// (withDefaults).
			norm := withDefaults(c)
			if got, want := c.Hash(), legacyHash(norm); got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		})
	}
}

func BenchmarkHash(b *testing.B) {
	c := Default()
	c.Headers = map[string]string{"User-Agent": "billing-svc/1.4", "X-Team": "payments"}
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Hash()
	}
}

func BenchmarkLegacyHash(b *testing.B) {
	c := Default()
	c.Headers = map[string]string{"User-Agent": "billing-svc/1.4", "X-Team": "payments"}
	b.ReportAllocs()
	for b.Loop() {
		_ = legacyHash(c)
	}
}

// TestClientConfigEqualSeesEveryKey changes each key of the schema in turn
// and checks that Equal notices, so that a key added later cannot be missed
// by it (which would keep a stale pipeline on reload).
func TestClientConfigEqualSeesEveryKey(t *testing.T) {
	base := Default()
	if !base.Equal(Default()) {
		t.Fatal("Equal of two Default(): got false, want true")
	}
	same := Default()
	same.Headers, same.Retry.RetryableMethods, same.Retry.RetryableStatus = nil, nil, nil
	same.Coalesce.Methods, same.Coalesce.VaryHeaders = nil, nil
	if !base.Equal(same) {
		t.Fatal("Equal with nil instead of an empty map and the default lists: got false, want true")
	}
	n := 0
	for _, f := range keyTable {
		path := f.path
		n++
		c := Default()
		v := f.valueOf(reflect.ValueOf(&c).Elem())
		switch f.kind {
		case kindDuration, kindInt:
			v.SetInt(v.Int() + 1)
		case kindFloat:
			v.SetFloat(v.Float() + 0.5)
		case kindBool:
			v.SetBool(!v.Bool())
		case kindString:
			v.SetString(v.String() + "x")
		case kindIntList:
			v.Set(reflect.Append(v, reflect.ValueOf(599)))
		case kindStringList:
			v.Set(reflect.Append(v, reflect.ValueOf("X")))
		case kindStringMap:
			v.Set(reflect.ValueOf(map[string]string{"X-New": "1"}))
		default:
			t.Fatalf("%s: no change for kind %d", path, f.kind)
		}
		if c.Equal(base) || base.Equal(c) {
			t.Errorf("Equal after changing %s: got true, want false", path)
		}
		if c.Hash() == base.Hash() {
			t.Errorf("Hash after changing %s: got the base hash, want another", path)
		}
	}
	if n < 40 {
		t.Fatalf("walked %d keys, want every key of the schema", n)
	}
}

func BenchmarkEqual(b *testing.B) {
	c, o := Default(), Default()
	c.Headers = map[string]string{"User-Agent": "billing-svc/1.4", "X-Team": "payments"}
	o.Headers = map[string]string{"User-Agent": "billing-svc/1.4", "X-Team": "payments"}
	b.ReportAllocs()
	for b.Loop() {
		if !c.Equal(o) {
			b.Fatal("not equal")
		}
	}
}

// lookupTree returns the value at the dotted path rel of a toTree tree.
func lookupTree(tree map[string]any, rel string) any {
	var v any = tree
	for seg := range strings.SplitSeq(rel, ".") {
		v = v.(map[string]any)[seg]
	}
	return v
}
