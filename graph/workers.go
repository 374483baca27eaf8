package graph

import (
	"sync/atomic"
	"time"
)

// The compiled operations and the interpreter resolve the elements of a
// list, and sibling fields that may wait on a dataloader, each in its own
// goroutine, as gqlgen does. A new goroutine starts with a small stack and
// grows it by copying as the resolvers run deep: on a page of 50 operators
// with their registrations, copying stacks took a quarter of the server's
// time. goConcurrently hands the work to a goroutine that ran such work
// before, and so has its stack grown, when one is idle; otherwise it starts
// one. The handoff never waits, so work that waits on other work it
// started cannot deadlock.

// maxIdleWorkers bounds the goroutines kept idle; idleWorkerTime is how
// long one stays idle before it ends.
const (
	maxIdleWorkers = 256
	idleWorkerTime = 10 * time.Second
)

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

// worker runs f, then the work it is handed while it waits for some at
// most idleWorkerTime, unless enough workers wait already.
func worker(f func()) {
	timer := time.NewTimer(idleWorkerTime)
	defer timer.Stop()
	for {
		f()
		if idleWorkers.Add(1) > maxIdleWorkers {
			idleWorkers.Add(-1)
			return
		}
		timer.Reset(idleWorkerTime)
		select {
		case f = <-workQueue:
			idleWorkers.Add(-1)
		case <-timer.C:
			idleWorkers.Add(-1)
			return
		}
	}
}
