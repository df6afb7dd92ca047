package workflow

import (
	"fmt"
	"strings"
)

// Closest returns the candidate closest to word by edit distance (a swap
// of two letters counts once), when one is close enough to be a likely
// typo.
func Closest(word string, candidates []string) (string, bool) {
	best, d := closest(word, candidates)
	return best, best != "" && d <= typoLimit(word)
}

func typoLimit(word string) int {
	if len(word) > 6 {
		return 3
	}
	return 2
}

// closest returns the candidate closest to word and its distance; a
// candidate that is the word in other case (GET for get) is at 0.
func closest(word string, candidates []string) (string, int) {
	for _, c := range candidates {
		if strings.EqualFold(word, c) {
			return c, 0
		}
	}
	best, bestD := "", 0
	for _, c := range candidates {
		d := editDistance(word, c)
		if best == "" || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	return best, bestD
}

// didYouMean returns `; did you mean "x"?` for the candidate closest to
// word, or "" when none is close enough.
func didYouMean(word string, candidates []string) string {
	best, d := closest(word, candidates)
	if best == "" || d > typoLimit(word) || d >= len(word) && d > 0 {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Damerau-Levenshtein (optimal string alignment)
// distance, so a swap of two letters ("fecth") costs one.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
