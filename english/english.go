// Package english puts counts into words for every message and report: "1 GPU", "8 GPUs", "2 processes".
// It imports nothing of Rival's, so any package can use it.
package english

import (
	"strconv"
	"strings"
)

// Plural is n followed by noun, in the plural unless n is 1: an "s" is added, or "es" after a
// noun that already ends in "s" ("process", "pass").
func Plural(n int, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "s"):
		return strconv.Itoa(n) + " " + noun + "es"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
