package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/switchboard-http/switchboard/config"
)

// A config rejected because a file it names is missing still says which
// files it names, so that a watcher can wait for the file.
func TestRejectedLoadNamesItsFiles(t *testing.T) {
	dir := t.TempDir()
	path, token := filepath.Join(dir, "clients.yaml"), filepath.Join(dir, "missing-token")
	yaml := "clients:\n  billing:\n    auth: {host: billing.test, bearer_token_file: " + token + "}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Loader{File: path}.Load()
	if err == nil {
		t.Fatal("Load accepted a config naming a missing token file")
	}
	if got, want := config.NamedFiles(err), []string{path, token}; !slices.Equal(got, want) {
		t.Fatalf("NamedFiles = %q, want %q", got, want)
	}
	if len(config.FieldErrors(err)) != 1 {
		t.Fatalf("FieldErrors(%v): want the one error about the token file", err)
	}
	if _, err := (config.Loader{File: filepath.Join(dir, "absent.yaml")}).Load(); config.NamedFiles(err) != nil {
		t.Fatalf("NamedFiles of a missing config file = %q, want nil", config.NamedFiles(err))
	}
}
