package config

import (
	"strings"
	"testing"
)

// TestKeyTableNamesEveryDescribedKey: every entry of keyDocs and
// keyFormats names a key or a section of the key table, so a key renamed
// in its tag cannot leave a stale description behind.
func TestKeyTableNamesEveryDescribedKey(t *testing.T) {
	known := map[string]bool{}
	for _, l := range keyTable {
		for p := l.path; p != ""; p, _, _ = cutLast(p) {
			known[p] = true
		}
	}
	for p := range keyDocs {
		if !known[p] {
			t.Errorf("keyDocs[%q]: names no key or section", p)
		}
	}
	for p := range keyFormats {
		if !known[p] {
			t.Errorf("keyFormats[%q]: names no key or section", p)
		}
	}
	for _, l := range keyTable {
		if l.doc == "" {
			t.Errorf("%s: no description in keyDocs", l.path)
		}
	}
}

// cutLast returns path without its last segment.
func cutLast(path string) (string, string, bool) {
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		return "", path, false
	}
	return path[:i], path[i+1:], true
}
