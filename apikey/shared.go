package apikey

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// SharedLimiter enforces the keys' rate limits across every process that
// uses it, so that a key's limit is the same whichever instance answers.
type SharedLimiter interface {
	// Allow records one request of the key with the given id against its
	// limit of requests per minute, or refuses it. An error means the
	// shared state could not be reached; the request is then limited in
	// this process's memory instead.
	Allow(ctx context.Context, id int64, limit int) (Decision, error)
}

// sharedRetryInterval is how long requests are limited in memory after
// the shared limiter failed, before it is tried again: an unreachable
// Redis costs one request a timeout per interval, not every request.
const sharedRetryInterval = time.Second

// RedisLimiter is a SharedLimiter in Redis: the generic cell rate
// algorithm of package redis_rate, with the same semantics as the
// in-memory limiter (a key may spend its limit at once, then one request
// every minute/limit), run atomically in Redis on Redis's clock.
type RedisLimiter struct {
	limiter *redis_rate.Limiter
}

// NewRedisLimiter returns a RedisLimiter over client.
func NewRedisLimiter(client *redis.Client) *RedisLimiter {
	return &RedisLimiter{limiter: redis_rate.NewLimiter(client)}
}

// quietRedis is go-redis's logger: its own unstructured log lines (a failed
// dial, say) are left out, since every failure also reaches the caller,
// which logs it once with its consequences.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietRedis{}) }

// NewRedisClient connects to the Redis at url (redis://, rediss:// or
// unix://) with timeouts short enough that an unreachable Redis delays a
// request by at most a quarter of a second, and without retries: a failed
// call falls back to the in-memory limiter at once.
func NewRedisClient(url string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	opts.DialTimeout = 250 * time.Millisecond
	opts.ReadTimeout = 250 * time.Millisecond
	opts.WriteTimeout = 250 * time.Millisecond
	opts.PoolTimeout = 250 * time.Millisecond
	opts.MaxRetries = -1 // none
	opts.DialerRetries = 1
	return redis.NewClient(opts), nil
}

// Allow implements SharedLimiter.
func (l *RedisLimiter) Allow(ctx context.Context, id int64, limit int) (Decision, error) {
	if limit < 1 {
		limit = 1
	}
	res, err := l.limiter.Allow(ctx, "stakegraph:key:"+strconv.FormatInt(id, 10), redis_rate.PerMinute(limit))
	if err != nil {
		return Decision{}, fmt.Errorf("redis rate limit: %w", err)
	}
	d := Decision{
		Allowed:   res.Allowed > 0,
		Limit:     limit,
		Remaining: res.Remaining,
		Reset:     res.ResetAfter,
	}
	if !d.Allowed {
		d.RetryAfter = res.RetryAfter
	}
	return d, nil
}
