package config_test

import (
	"path/filepath"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/internal/wants"
)

// testdataDir is the module's testdata folder, shared with examples.
const testdataDir = "../testdata"

func testdataFiles(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testdataDir, dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("glob testdata/%s: got %d files, err %v; want some", dir, len(files), err)
	}
	return files
}

func TestTestdataValid(t *testing.T) {
	for _, path := range testdataFiles(t, "valid") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cfg := mustLoad(t, config.Loader{File: path})
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate: got %v, want nil", err)
			}
			if len(cfg.Clients) == 0 {
				t.Errorf("clients: got none, want some")
			}
		})
	}
}

func TestTestdataFullShowsBuiltins(t *testing.T) {
	cfg := mustLoad(t, config.Loader{File: filepath.Join(testdataDir, "valid", "full.yaml")})
	want := config.Default()
	want.Headers = map[string]string{"User-Agent": "billing-svc/1.4"}
	if got := cfg.Defaults.Hash(); got != want.Hash() {
		t.Errorf("full.yaml defaults: got %+v, want the built-in defaults plus its User-Agent", cfg.Defaults)
	}
	for key, o := range cfg.Provenance.Defaults {
		if o.Layer != config.LayerFile {
			t.Errorf("full.yaml defaults %s: got layer %v, want file (every key written)", key, o.Layer)
		}
	}
}

func TestTestdataInvalid(t *testing.T) {
	for _, path := range testdataFiles(t, "invalid") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			wants := wants.Lines(t, path)
			mustFail(t, config.Loader{File: path}, wants...)
		})
	}
}
