package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
)

// FuzzLoad feeds arbitrary bytes as the YAML file. Load must not panic and
// must return either a Config that passes Validate, or an error that is
// file-level (naming the file) or made of FieldErrors that all have a Path.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"valid", "invalid"} {
		for _, path := range testdataFiles(f, dir) {
			b, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte("clients: {a: {headers: {x: 1, X: 2}}}"))
	f.Add([]byte("defaults: &d {timeout: 1s}\nclients: {a: {<<: *d, retry: ~}}"))
	f.Add([]byte("clients: {1: {}, true: null}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.yaml")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Loader{File: path}.Load()
		if err == nil {
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("Load: got a Config that fails Validate: %v", verr)
			}
			return
		}
		fes := config.FieldErrors(err)
		if len(fes) == 0 {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("Load: got a file-level error not naming the file: %v", err)
			}
			return
		}
		for _, fe := range fes {
			if fe.Path == "" {
				t.Fatalf("Load: got a FieldError without Path: %v", fe)
			}
		}
	})
}
