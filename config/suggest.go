package config

import "strings"

// suggest returns the candidate nearest to word by edit distance, or "" when
// none is close enough to be a likely typo: at most a third of the word's
// length (and at least 1, at most 3) edits away.
func suggest(word string, candidates []string) string {
	limit := len(word) / 3
	limit = max(limit, 1)
	limit = min(limit, 3)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// suggestKey is suggest for a key name, which also finds a key that
// holds word whole when no edit is close enough: "backof" is far from
// every key by edits, but part of initial_backoff and max_backoff. Several
// such keys are all named, "a or b"; "" when none.
func suggestKey(word string, keys []string) string {
	if s := suggest(word, keys); s != "" || len(word) < 4 {
		return s
	}
	var found []string
	for _, k := range keys {
		if strings.Contains(k, word) {
			found = append(found, k)
		}
	}
	if len(found) > 3 {
		return ""
	}
	return strings.Join(found, " or ")
}

// editDistance is the Levenshtein distance between a and b, counted in bytes
// (keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
