package graph

import "sync/atomic"

// The compiled operations resolve the elements of a list, and sibling
// fields that may wait on a dataloader, each in its own goroutine, as
// gqlgen does; the interpreter resolves each such field of a level in its
// own goroutine. A new goroutine starts with a small stack and grows it by
// copying as the resolvers run deep: on a page of 50 operators with their
// registrations, copying stacks took a quarter of the server's time.
// goConcurrently hands the work to a goroutine that ran such work before,
// and so has its stack grown, when one is idle; otherwise it starts one.
// The handoff never waits, so work that waits on other work it started
// cannot deadlock.

// maxIdleWorkers bounds the goroutines kept idle: a page of a thousand
// elements hands out a thousand pieces of work at once. An idle worker
// holds little: the garbage collector shrinks the stacks of idle
// goroutines.
const maxIdleWorkers = 2048

var (
	// workQueue hands work to an idle worker.
	workQueue = make(chan func())
	// idleWorkers counts the workers waiting on workQueue.
	idleWorkers atomic.Int32
)

// goConcurrently runs f in another goroutine.
func goConcurrently(f func()) {
	select {
	case workQueue <- f:
	default:
		go worker(f)
	}
}

// worker runs f, then the work it is handed, unless enough workers wait
// already when it is done.
func worker(f func()) {
	for {
		f()
		if idleWorkers.Add(1) > maxIdleWorkers {
			idleWorkers.Add(-1)
			return
		}
		f = <-workQueue
		idleWorkers.Add(-1)
	}
}
