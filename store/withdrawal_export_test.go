package store

// SetBucketSkip sets the skip from which ListWithdrawals reads deep pages
// by block bucket counts, for a test, and returns the function restoring
// it.
func SetBucketSkip(n int) (restore func()) {
	old := bucketSkip
	bucketSkip = n
	return func() { bucketSkip = old }
}
