package reload

import (
	"log/slog"
	"time"
)

// DefaultDebounce is the quiet time used when [Options.Debounce] is zero.
const DefaultDebounce = 100 * time.Millisecond

// DefaultMaxDebounce is the longest wait used when [Options.MaxDebounce] is zero.
const DefaultMaxDebounce = time.Second

// Options configures [Watch]. The zero value is ready to use: a debounce of
// [DefaultDebounce] and logging to [slog.Default]. Options is a plain value that Watch
// copies; changing it afterwards has no effect.
type Options struct {
	// Debounce is the quiet time after the last relevant event before a reload is due.
	// Every new event restarts it, so a burst of writes ends in one reload. Zero means
	// DefaultDebounce; negative values are treated as zero.
	Debounce time.Duration

	// MaxDebounce bounds the wait under continuous events: a reload is due at the latest
	// MaxDebounce after the first event of a burst, even if events keep coming closer
	// together than Debounce (a file rewritten every 50 ms). Zero means
	// DefaultMaxDebounce; a value below Debounce is taken as Debounce.
	MaxDebounce time.Duration

	// Logger receives the watcher's records (each with an "event" attribute such as
	// "watch.error"). Nil means slog.Default(), read when Watch is called.
	Logger *slog.Logger
}

// withDefaults returns o with every zero field replaced by its default.
func (o Options) withDefaults() Options {
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.MaxDebounce <= 0 {
		o.MaxDebounce = DefaultMaxDebounce
	}
	o.MaxDebounce = max(o.MaxDebounce, o.Debounce)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}
