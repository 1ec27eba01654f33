package tasks

// strOrEmpty is *p, or "" for nil.
func strOrEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
