package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Event is one message in the outbox.
type Event struct {
	ID      string
	Topic   string
	Payload []byte
	// Attempts counts deliveries started, this one included.
	Attempts  int
	CreatedAt time.Time
}

// MaxTopicLen bounds topic names.
const MaxTopicLen = 255

var errNoTx = errors.New("outbox: enqueue needs the handler's transaction")

// Enqueue writes an event inside tx, the transaction that also writes the
// business rows, so the event exists if and only if they commit. It returns
// the event id (the id consumers dedupe on with an Inbox). The dispatcher
// delivers it after the commit.
func Enqueue(ctx context.Context, tx *sql.Tx, topic string, payload []byte) (string, error) {
	if tx == nil {
		return "", errNoTx
	}
	if topic == "" || len(topic) > MaxTopicLen {
		return "", fmt.Errorf("outbox: topic must be 1-%d bytes, got %d", MaxTopicLen, len(topic))
	}
	if payload == nil {
		payload = []byte{}
	}
	id := newID()
	now := time.Now().UnixNano()
	_, err := tx.ExecContext(ctx,
		`INSERT INTO mcpledger_outbox (id, topic, payload, created_at, available_at) VALUES ($1, $2, $3, $4, $5)`,
		id, topic, payload, now, now)
	if err != nil {
		return "", fmt.Errorf("outbox: enqueue %s: %w", topic, err)
	}
	return id, nil
}

// newID returns "evt_" and 32 random hex digits: unique without
// coordination between processes.
func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms.
		panic("outbox: reading random bytes: " + err.Error())
	}
	return "evt_" + hex.EncodeToString(b[:])
}
