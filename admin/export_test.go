package admin

// SetDefaultScan sets how many dead letters a page of the default queue
// reads at most, and returns what puts it back.
func SetDefaultScan(n int) func() {
	old := defaultScan
	defaultScan = n
	return func() { defaultScan = old }
}
