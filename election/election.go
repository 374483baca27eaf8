// Package election runs a piece of work, such as the chain indexer, in
// exactly one of several processes that share a PostgreSQL database.
//
// The leader is the process that holds a session-level advisory lock on the
// primary. PostgreSQL releases the lock when the leader's session ends: the
// process stopped, was killed, or lost its connection (the lock's session
// asks the server to probe the connection every few seconds). The other
// processes try to take the lock every RetryInterval, so one of them takes
// over within seconds. The leader checks every CheckInterval that its
// session still holds the lock, and stops its work as soon as it does not,
// or when a check goes unanswered for CheckTimeout: a leader cut off from
// the database stops before the server releases its lock to another.
package election

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stakegraph/stakegraph/store"
)

// Defaults of Config.
const (
	DefaultRetryInterval = 2 * time.Second
	DefaultCheckInterval = time.Second
	// DefaultCheckTimeout is well below the time the server takes to
	// release the lock of a session cut off by the network (the 5 s + 3 ×
	// 2 s of keepalives store.TryLock asks for), so that the leader stops
	// first, and well above a slow answer from a busy server.
	DefaultCheckTimeout = 5 * time.Second
)

// Config configures an Elector.
type Config struct {
	// DB is the primary database, which holds the lock.
	DB *store.DB
	// Key is the advisory lock key, one per kind of work.
	Key int64
	// Role names the work in logs and metrics ("indexer").
	Role string
	// Name identifies this process to the others (in pg_stat_activity and
	// their logs); default "stakegraph <role> <host>:<pid>".
	Name string
	// RetryInterval is how often a process that does not lead tries to
	// take the lock; default DefaultRetryInterval.
	RetryInterval time.Duration
	// CheckInterval is how often the leader checks that it holds the lock;
	// default DefaultCheckInterval.
	CheckInterval time.Duration
	// CheckTimeout is how long the leader waits for a check's answer
	// before it takes the lock for lost; default DefaultCheckTimeout.
	CheckTimeout time.Duration
	// Logger receives the changes of leadership; default slog.Default().
	Logger *slog.Logger
}

// Elector campaigns for the leadership of one kind of work.
type Elector struct {
	cfg     Config
	leading atomic.Bool
	terms   atomic.Int64
}

// New returns an Elector for cfg.
func New(cfg Config) *Elector {
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = DefaultCheckInterval
	}
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = DefaultCheckTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Name == "" {
		host, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("stakegraph %s %s:%d", cfg.Role, host, os.Getpid())
	}
	cfg.Logger = cfg.Logger.With(slog.Group("election", "role", cfg.Role, "name", cfg.Name))
	return &Elector{cfg: cfg}
}

// Name returns the name of this process in the election.
func (e *Elector) Name() string { return e.cfg.Name }

// Leading reports whether this process leads now.
func (e *Elector) Leading() bool { return e.leading.Load() }

// Terms returns how many times this process has been elected.
func (e *Elector) Terms() int64 { return e.terms.Load() }

// Collectors returns the Prometheus metrics of the elector:
// stakegraph_leader (1 while this process leads) and
// stakegraph_leader_terms_total, labelled with the role.
func (e *Elector) Collectors() []prometheus.Collector {
	labels := prometheus.Labels{"role": e.cfg.Role}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "stakegraph_leader", ConstLabels: labels,
			Help: "1 while this process leads the role's work (holds its PostgreSQL advisory lock), else 0.",
		}, func() float64 {
			if e.Leading() {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "stakegraph_leader_terms_total", ConstLabels: labels,
			Help: "Times this process was elected to lead the role's work.",
		}, func() float64 { return float64(e.Terms()) }),
	}
}

// Run campaigns until ctx ends and runs lead whenever this process leads,
// with a context that ends when ctx ends or the lock is lost; lead must
// return soon after its context ends. After a lost lock Run campaigns
// again. When lead returns while the lock is still held, Run gives the
// lock up and returns lead's error (nil when it finished its work). Run
// returns nil when ctx ends.
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	log := e.cfg.Logger
	lastHolder := ""
	failing := false // the last campaign failed, and said so in the log
	for {
		lock, err := e.cfg.DB.TryLock(ctx, e.cfg.Key, e.cfg.Name)
		if err == nil && failing {
			log.Info("campaigning again")
			failing = false
		}
		switch {
		case ctx.Err() != nil:
			if lock != nil {
				e.release(ctx, lock)
			}
			return nil
		case err != nil:
			if !failing {
				log.Warn("cannot campaign for leadership; retrying", "err", err, "every", e.cfg.RetryInterval)
			}
			failing = true
		case lock == nil:
			holder, held, err := e.cfg.DB.LockHolder(ctx, e.cfg.Key)
			if err == nil && held && holder != lastHolder {
				log.Info("standing by: another process leads", "leader", holder)
				lastHolder = holder
			}
		default:
			lastHolder = ""
			if done, err := e.term(ctx, lock, lead); done {
				return err
			}
			continue // lost the lock: campaign again at once
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(e.cfg.RetryInterval):
		}
	}
}

// term runs lead while lock is held. done says whether Run ends, with err.
func (e *Elector) term(ctx context.Context, lock *store.SessionLock, lead func(context.Context) error) (done bool, err error) {
	log := e.cfg.Logger
	log.Info("elected leader")
	e.terms.Add(1)
	e.leading.Store(true)
	defer e.leading.Store(false)

	termCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	result := make(chan error, 1)
	go func() { result <- lead(termCtx) }()

	ticker := time.NewTicker(e.cfg.CheckInterval)
	defer ticker.Stop()
	for {
		select {
		case err := <-result:
			e.release(ctx, lock)
			switch {
			case ctx.Err() != nil:
				log.Info("left leadership: stopping")
				return true, nil
			case err != nil:
				log.Error("left leadership: the work failed", "err", err)
			default:
				log.Info("left leadership: the work is done")
			}
			return true, err
		case <-ticker.C:
			checkCtx, stop := context.WithTimeout(ctx, e.cfg.CheckTimeout)
			err := lock.Check(checkCtx)
			stop()
			if err == nil || ctx.Err() != nil {
				continue
			}
			// Stop the work first: by the time the server releases the
			// lock to another process, this one must no longer write.
			log.Warn("lost leadership; stopping the work", "err", err)
			cancel()
			<-result
			e.release(ctx, lock)
			return ctx.Err() != nil, nil
		}
	}
}

// release gives lock up, waiting at most CheckTimeout for a session that
// may be cut off (whose lock the server then releases on its own).
func (e *Elector) release(ctx context.Context, lock *store.SessionLock) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.CheckTimeout)
	defer cancel()
	_ = lock.Release(ctx)
}
