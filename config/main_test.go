package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/config"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// writeConfig writes content to a fresh YAML file and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "clients.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// environ returns an Environ func serving exactly vars.
func environ(vars ...string) func() []string {
	return func() []string { return vars }
}

// flagSet returns a parsed FlagSet with --set registered; define, when not
// nil, adds the application's own flags before parsing.
func flagSet(t *testing.T, define func(fs *pflag.FlagSet), args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("app", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	if define != nil {
		define(fs)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse flags %q: %v", args, err)
	}
	return fs
}

// mustLoad loads l and fails the test on error.
func mustLoad(t *testing.T, l config.Loader) config.Config {
	t.Helper()
	cfg, err := l.Load()
	if err != nil {
		t.Fatalf("Load: got error %v, want nil", err)
	}
	return cfg
}

// mustFail loads l and checks that the error contains every want.
func mustFail(t *testing.T, l config.Loader, wants ...string) error {
	t.Helper()
	cfg, err := l.Load()
	if err == nil {
		t.Fatalf("Load: got nil error, want one containing %q", wants)
	}
	if cfg.Clients != nil || cfg.Provenance != nil || cfg.InputHash != "" {
		t.Errorf("Load: got a non-zero Config with error %v, want the zero Config", err)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Load error:\n%v\ngot no %q, want it", err, w)
		}
	}
	return err
}

// client returns the named client, failing when it is missing.
func client(t *testing.T, cfg config.Config, name string) config.ClientConfig {
	t.Helper()
	c, ok := cfg.Client(name)
	if !ok {
		t.Fatalf("Client(%q): got none, want one (clients: %v)", name, keys(cfg.Clients))
	}
	return c
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
