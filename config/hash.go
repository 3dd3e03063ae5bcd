package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Hash returns a stable digest (64 hex digits of SHA-256) of every effective
// setting of c: equal settings give equal hashes in every process and
// version of Go, and any change to any key, header or list item changes it.
// A nil and an empty map or list hash alike. The contents of referenced
// files (tokens, certificates) are not part of it, only their names. Use it
// to tell whether a client changed across reloads and to show in status.
// Secret values only enter the digest, never the output. Hash is safe for
// concurrent use.
func (c ClientConfig) Hash() string {
	h := sha256.New()
	tree := toTree(c)
	clientSchema.walkLeaves("", func(rel string, f *field) {
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
	})
	return hex.EncodeToString(h.Sum(nil))
}

// lookupTree returns the value at the dotted path rel of a toTree tree.
func lookupTree(tree map[string]any, rel string) any {
	var v any = tree
	for seg := range strings.SplitSeq(rel, ".") {
		v = v.(map[string]any)[seg]
	}
	return v
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
// by the defaults or any client, each once: the files whose change should
// trigger a reload.
func referencedFiles(file string, cfg Config) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	add(file)
	var named []string
	for _, c := range append([]ClientConfig{cfg.Defaults}, slices.Collect(maps.Values(cfg.Clients))...) {
		named = append(named, c.TLS.CAFile, c.TLS.CertFile, c.TLS.KeyFile, c.Auth.BearerTokenFile, c.Auth.Basic.PasswordFile)
	}
	slices.Sort(named)
	for _, p := range named {
		add(p)
	}
	return out
}
