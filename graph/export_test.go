package graph

// The demo data set of the package's tests, for the external tests.
var (
	DemoNow   = demoNow
	DemoStore = demoStore
)
