package compare

import "fmt"

// Plural is "1 GPU", "8 GPUs", "0 results".
func Plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
