package config_test

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/switchboard-http/switchboard/config"
)

// The layers together: built-in defaults, env and --set flags over them
// (no file here), each value's origin in Provenance.
func ExampleRegisterFlags() {
	fs := pflag.NewFlagSet("billing-svc", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	if err := fs.Parse([]string{"--set", "clients.billing.timeout=2s"}); err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := config.Loader{
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
