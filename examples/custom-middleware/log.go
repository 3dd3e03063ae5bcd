package main

import "log/slog"

// quietLogger drops the library's per-attempt debug records so that the
// demo's output is only its own.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
