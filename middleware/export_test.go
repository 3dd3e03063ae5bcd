package middleware

// PerHeaderQuotas returns how many per-header buckets of scope process l
// keeps.
func PerHeaderQuotas(l *RateLimit) int { return l.perHeaderQuotas() }
