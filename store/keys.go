package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

// APIKey describes one API key. The key itself is never stored, only its
// SHA-256 and a short prefix to recognise it by.
type APIKey struct {
	ID   int64
	Name string
	// Prefix is the start of the key, for display ("sg_1a2b3c4d").
	Prefix string
	// RateLimitPerMinute overrides the service's default limit when set.
	RateLimitPerMinute *int
	CreatedAt          time.Time
	RevokedAt          *time.Time
}

// apiKeyPrefix starts every API key.
const apiKeyPrefix = "sg_"

// apiKeyDisplayLen is how much of a key APIKey.Prefix keeps: "sg_" and the
// first eight hex digits.
const apiKeyDisplayLen = len(apiKeyPrefix) + 8

// HashAPIKey returns the SHA-256 of a plain-text API key, as stored.
func HashAPIKey(key string) [32]byte { return sha256.Sum256([]byte(key)) }

// CreateAPIKey makes a new random key ("sg_" and 40 hex digits from
// crypto/rand), stores only its SHA-256 and display prefix, and returns the
// plain key; it cannot be recovered later. A nil rateLimitPerMinute means the
// service default. An empty or duplicate name or a non-positive rate limit
// is an error wrapping derrors.InvalidArgument.
func (db *DB) CreateAPIKey(ctx context.Context, name string, rateLimitPerMinute *int) (key string, err error) {
	if strings.TrimSpace(name) == "" {
		return "", fmt.Errorf("%w: an API key needs a name", derrors.InvalidArgument)
	}
	if rateLimitPerMinute != nil && *rateLimitPerMinute <= 0 {
		return "", fmt.Errorf("%w: the rate limit must be a positive number of requests per minute", derrors.InvalidArgument)
	}
	var secret [20]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", fmt.Errorf("generate API key: %w", err)
	}
	key = apiKeyPrefix + hex.EncodeToString(secret[:])
	hash := HashAPIKey(key)
	_, err = db.execContext(ctx, `
		INSERT INTO api_keys (name, key_hash, key_prefix, rate_limit_per_minute)
		VALUES ($1, $2, $3, $4)`,
		name, hash[:], key[:apiKeyDisplayLen], rateLimitPerMinute)
	if err != nil {
		var pqErr *pq.Error
		if errors.As(err, &pqErr) && pqErr.Code == "23505" && pqErr.Constraint == "api_keys_name_key" {
			return "", fmt.Errorf("%w: an API key named %q already exists", derrors.InvalidArgument, name)
		}
		return "", fmt.Errorf("create API key: %w", Classify(err))
	}
	return key, nil
}

// apiKeyRow is an api_keys row without the hash.
type apiKeyRow struct {
	ID                 int64      `db:"id"`
	Name               string     `db:"name"`
	Prefix             string     `db:"key_prefix"`
	RateLimitPerMinute *int       `db:"rate_limit_per_minute"`
	CreatedAt          time.Time  `db:"created_at"`
	RevokedAt          *time.Time `db:"revoked_at"`
}

func (r apiKeyRow) apiKey() APIKey {
	return APIKey{
		ID:                 r.ID,
		Name:               r.Name,
		Prefix:             r.Prefix,
		RateLimitPerMinute: r.RateLimitPerMinute,
		CreatedAt:          r.CreatedAt,
		RevokedAt:          r.RevokedAt,
	}
}

// ListAPIKeys returns every API key, revoked ones included, oldest first.
func (db *DB) ListAPIKeys(ctx context.Context) ([]APIKey, error) {
	var rows []apiKeyRow
	if err := db.selectContext(ctx, &rows, `
		SELECT id, name, key_prefix, rate_limit_per_minute, created_at, revoked_at
		FROM api_keys
		ORDER BY id`); err != nil {
		return nil, fmt.Errorf("list API keys: %w", Classify(err))
	}
	keys := make([]APIKey, len(rows))
	for i, r := range rows {
		keys[i] = r.apiKey()
	}
	return keys, nil
}

// RevokeAPIKey revokes the key with the given name. An unknown or already
// revoked name is an error wrapping derrors.NotFound.
func (db *DB) RevokeAPIKey(ctx context.Context, name string) error {
	res, err := db.execContext(ctx, `
		UPDATE api_keys SET revoked_at = now()
		WHERE name = $1 AND revoked_at IS NULL`, name)
	if err != nil {
		return fmt.Errorf("revoke API key: %w", Classify(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("revoke API key: %w", Classify(err))
	}
	if n == 0 {
		return fmt.Errorf("%w: no active API key named %q", derrors.NotFound, name)
	}
	return nil
}

// ActiveAPIKeys returns every unrevoked key by the SHA-256 of its plain
// text, for an in-memory cache.
func (db *DB) ActiveAPIKeys(ctx context.Context) (map[[32]byte]APIKey, error) {
	release, err := hold(ctx)
	if err != nil {
		return nil, fmt.Errorf("load API keys: %w", err)
	}
	defer release()
	rows, err := db.sql.QueryxContext(ctx, `
		SELECT key_hash, id, name, key_prefix, rate_limit_per_minute, created_at, revoked_at
		FROM api_keys
		WHERE revoked_at IS NULL`)
	if err != nil {
		return nil, fmt.Errorf("load API keys: %w", Classify(err))
	}
	defer rows.Close()
	keys := map[[32]byte]APIKey{}
	for rows.Next() {
		var hash []byte
		var r apiKeyRow
		if err := rows.Scan(&hash, &r.ID, &r.Name, &r.Prefix, &r.RateLimitPerMinute, &r.CreatedAt, &r.RevokedAt); err != nil {
			return nil, fmt.Errorf("load API keys: %w", Classify(err))
		}
		if len(hash) != 32 {
			return nil, fmt.Errorf("load API keys: key %q has a %d-byte hash", r.Name, len(hash))
		}
		keys[[32]byte(hash)] = r.apiKey()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load API keys: %w", Classify(err))
	}
	return keys, nil
}

// APIKeysVersion returns the count of changes to the API keys: every
// statement that writes api_keys (creating or revoking a key, or an edit
// by hand) increments it in its own transaction. A cache of ActiveAPIKeys
// that read version v before loading is current as long as the version is
// still v.
func (db *DB) APIKeysVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := db.getContext(ctx, &v, `SELECT version FROM api_keys_version`); err != nil {
		return 0, fmt.Errorf("read API keys version: %w", Classify(err))
	}
	return v, nil
}

// WellFormedAPIKey reports whether key has the form of the keys that
// CreateAPIKey makes: "sg_" and 40 lowercase hexadecimal digits.
func WellFormedAPIKey(key string) bool {
	if len(key) != len(apiKeyPrefix)+40 || !strings.HasPrefix(key, apiKeyPrefix) {
		return false
	}
	for _, c := range key[len(apiKeyPrefix):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// APIKeyPrefix returns the start of a well-formed key that APIKey.Prefix
// keeps and `stakegraph keys list` shows, to name a key in messages without
// repeating it whole.
func APIKeyPrefix(key string) string {
	if len(key) < apiKeyDisplayLen {
		return key
	}
	return key[:apiKeyDisplayLen]
}
