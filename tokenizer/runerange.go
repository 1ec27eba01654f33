package tokenizer

import "sort"

// runeRange is an inclusive range of code points in the generated tables.
type runeRange struct{ lo, hi rune }

func inRanges(ranges []runeRange, r rune) bool {
	i := sort.Search(len(ranges), func(i int) bool { return ranges[i].hi >= r })
	return i < len(ranges) && ranges[i].lo <= r
}
