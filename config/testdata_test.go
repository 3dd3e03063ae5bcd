package config_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
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
			wants := wantLines(t, path)
			mustFail(t, config.Loader{File: path}, wants...)
		})
	}
}

// wantLines returns the substrings of the file's leading "# want:" lines.
func wantLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var wants []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		w, ok := strings.CutPrefix(sc.Text(), "# want: ")
		if !ok {
			break
		}
		wants = append(wants, w)
	}
	if len(wants) == 0 {
		t.Fatalf("%s: got no leading # want: line, want one or more", path)
	}
	return wants
}
