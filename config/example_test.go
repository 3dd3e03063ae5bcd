package config_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/switchboard-http/switchboard/config"
)

// The env layer's SWITCHBOARD_DEFAULTS__TIMEOUT changes every client that
// does not set its own timeout, but not billing, whose file timeout is its
// own key.
func ExampleLoader_Load() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "clients.yaml")
	os.WriteFile(file, []byte(`defaults:
  timeout: 10s
clients:
  billing:
    timeout: 5s
    retry: {max_retries: 5}
  search: {}
`), 0o600)

	cfg, err := config.Loader{
		File:      file,
		EnvPrefix: "SWITCHBOARD_",
		Environ:   func() []string { return []string{"SWITCHBOARD_DEFAULTS__TIMEOUT=2s"} },
	}.Load()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"billing", "search"} {
		c, _ := cfg.Client(name)
		o, _ := cfg.Provenance.Of(name, "timeout")
		fmt.Printf("%s: timeout %v from %s %s (line %d)\n", name, c.Timeout, o.Layer, o.Path, o.Line)
	}
	// Output:
	// billing: timeout 5s from file clients.billing.timeout (line 5)
	// search: timeout 2s from env defaults.timeout (line 0)
}

func ExampleFieldErrors() {
	cfg := config.Config{Defaults: config.Default()}
	cfg.Defaults.Retry.MaxRetries = -1
	cfg.Defaults.Logging.Level = "trace"
	for _, fe := range config.FieldErrors(cfg.Validate()) {
		fmt.Println(fe.Path, "—", fe.Msg)
	}
	// Output:
	// defaults.retry.max_retries — must be >= 0, got -1
	// defaults.logging.level — must be one of debug, info, off, got "trace"
}
