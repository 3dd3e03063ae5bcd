//go:build !unix

package benchmarks

import "time"

// processCPU returns 0: the platform's process CPU time is not read here,
// and the interleaved comparison then reports wall time alone.
func processCPU() time.Duration { return 0 }
