package main

import (
	"slices"
	"testing"
	"time"

	"github.com/switchboard-http/switchboard/config"
)

// TestChangedOnlyIsChangedKeys checks that explain --changed shows exactly
// the keys config.ChangedKeys names against the built-in defaults (the
// decision Status.NonDefault reads): a nil retry list means the default
// list, so it is no change, whatever its text.
func TestChangedOnlyIsChangedKeys(t *testing.T) {
	c := config.Default()
	c.Timeout = 7 * time.Second
	c.Retry.RetryableStatus, c.Retry.RetryableMethods = nil, nil
	var settings []explainSetting
	for _, s := range c.Settings() {
		settings = append(settings, explainSetting{Key: s.Key, Value: s.Value, text: s.Text})
	}
	var got, want []string
	for _, s := range changedOnly(c, settings) {
		got = append(got, s.Key)
	}
	for _, kc := range config.ChangedKeys(config.Default(), c) {
		want = append(want, kc.Key)
	}
	if !slices.Equal(got, want) || len(want) != 1 {
		t.Errorf("changed keys: got %q, want %q (timeout only)", got, want)
	}
}
