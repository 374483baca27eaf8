package store

// SetBucketSkip sets the skip from which ListWithdrawals and ListDeposits
// read deep pages by kept counts, for a test, and returns the function restoring
// it.
func SetBucketSkip(n int) (restore func()) {
	old := bucketSkip
	bucketSkip = n
	return func() { bucketSkip = old }
}
