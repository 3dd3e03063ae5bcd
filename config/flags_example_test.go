package config_test

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/switchboard-http/switchboard/config"
)

// clientsSource is a Source defining the client billing, in place of a
// file: env variables and flags can set a client's keys but not create one.
type clientsSource struct{}

func (clientsSource) Name() string { return "inline" }
func (clientsSource) Read() (map[string]any, error) {
	return map[string]any{"clients": map[string]any{"billing": map[string]any{}}}, nil
}

// The layers together: built-in defaults, a Source defining the client
// (no file here), env and --set flags over them, each value's origin in
// Provenance.
func ExampleRegisterFlags() {
	fs := pflag.NewFlagSet("billing-svc", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	if err := fs.Parse([]string{"--set", "clients.billing.timeout=2s"}); err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := config.Loader{
		Sources:   []config.Source{clientsSource{}},
		EnvPrefix: "SWITCHBOARD_",
		Environ:   func() []string { return []string{"SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=5"} },
		Flags:     fs,
	}.Load()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, key := range []string{"timeout", "retry.max_retries", "retry.initial_backoff"} {
		o, _ := cfg.Provenance.Of("billing", key)
		fmt.Printf("%s from %s %s\n", key, o.Layer, o.Name)
	}
	// Output:
	// timeout from flag --set clients.billing.timeout
	// retry.max_retries from env SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES
	// retry.initial_backoff from built-in
}
