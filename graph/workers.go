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

// maxIdleWorkers bounds the goroutines kept idle, enough for the pages
// that several requests resolve at once (a hundred elements each, two
// pieces of work per element); work beyond them starts new goroutines.
// Their stacks count against the server's soft memory limit: 2,048 idle
// workers held 14 MB of stacks, which with both caches full left the
// heap so little room under the limit that the garbage collector ran
// several times a second (cached /stakers and /avs/{address}/stakers
// measured after twelve other routes: 1,693-1,980 → 2,049 and 913-1,121
// → 1,187 requests/s with 256).
const maxIdleWorkers = 256

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
