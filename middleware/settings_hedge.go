package middleware

import "time"

// Built-in hedging defaults.
const (
	DefaultHedgeDelay     = 100 * time.Millisecond
	DefaultHedgeMaxHedges = 1
)

// HedgeSettings is the `hedge` block: hedged requests in place of retries,
// after gRPC's hedgingPolicy. The zero value is off; DefaultHedgeSettings
// returns the built-in values. A plain value.
type HedgeSettings struct {
	// Enabled puts the hedging layer in place of the retry layer.
	Enabled bool `koanf:"enabled" json:"enabled"`
	// Delay is how long a copy waits for an answer before the next copy
	// goes out. Zero sends the copies at once.
	Delay time.Duration `koanf:"delay" json:"delay"`
	// DelayPercentile, in (0, 1), replaces Delay by that percentile of the
	// latencies of the client's recent answered attempts (see Latencies),
	// never below Delay. Zero means the fixed Delay.
	DelayPercentile float64 `koanf:"delay_percentile" json:"delay_percentile" minimum:"0" exclusiveMaximum:"1"`
	// MaxHedges is how many extra copies may be in flight beside the first
	// attempt. Zero means 1.
	MaxHedges int `koanf:"max_hedges" json:"max_hedges" minimum:"1"`
}

// DefaultHedgeSettings returns the built-in hedge settings: off, a 100ms
// delay, one extra copy.
func DefaultHedgeSettings() HedgeSettings {
	return HedgeSettings{Delay: DefaultHedgeDelay, MaxHedges: DefaultHedgeMaxHedges}
}
