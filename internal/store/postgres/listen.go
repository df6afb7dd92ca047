package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Notifications.
//
// A process that waits for something another process commits (the end of
// a queued run it follows) looks at the database now and then; a
// notification (NOTIFY, sent once the COMMIT is done) lets it look at once. Each
// Store listens on one connection of its own per channel, opened on the
// first Wake and kept until Close, whatever the number of waiters: a server
// following a thousand runs holds one. A notification is a hint: one sent
// while the connection was down is lost, and waiters keep looking on their
// own as well.

// listener is the connection that listens on one channel, and who waits
// for which payload.
type listener struct {
	// ready is closed once the first LISTEN was tried, whether it
	// succeeded or not.
	ready   chan struct{}
	once    sync.Once
	mu      sync.Mutex
	waiters map[string]map[*waiter]bool
}

type waiter struct{ c chan struct{} }

// Wake returns a channel that receives (without blocking the sender: one
// pending value at most) when a notification on channel carries payload,
// and a function to stop. The first Wake of a channel starts listening on
// it, and every Wake returns once the listening connection tried its
// LISTEN (or ctx ended): a notification committed after Wake returned
// reaches the channel unless that connection was lost.
func (s *Store) Wake(ctx context.Context, channel, payload string) (<-chan struct{}, func()) {
	w := &waiter{c: make(chan struct{}, 1)}
	s.listenMu.Lock()
	l := s.listeners[channel]
	if l == nil {
		l = &listener{ready: make(chan struct{}), waiters: map[string]map[*waiter]bool{}}
		if s.listeners == nil {
			s.listeners = map[string]*listener{}
		}
		s.listeners[channel] = l
		s.listening.Add(1)
		go func() {
			defer s.listening.Done()
			s.listen(channel, l)
		}()
	}
	s.listenMu.Unlock()
	l.mu.Lock()
	if l.waiters[payload] == nil {
		l.waiters[payload] = map[*waiter]bool{}
	}
	l.waiters[payload][w] = true
	l.mu.Unlock()
	select {
	case <-l.ready:
	case <-ctx.Done():
	}
	return w.c, func() {
		l.mu.Lock()
		delete(l.waiters[payload], w)
		if len(l.waiters[payload]) == 0 {
			delete(l.waiters, payload)
		}
		l.mu.Unlock()
	}
}

// listen holds a connection listening on channel until the store closes,
// and wakes the waiters of each notification's payload. It connects again,
// with backoff, when the connection is lost.
func (s *Store) listen(channel string, l *listener) {
	defer l.once.Do(func() { close(l.ready) })
	ctx := s.listenCtx
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, channel, l)
		l.once.Do(func() { close(l.ready) }) // it could not listen: waiters go on without
		if err == nil || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, channel string, l *listener) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
	l.once.Do(func() { close(l.ready) })
	if err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.mu.Lock()
		for w := range l.waiters[n.Payload] {
			select {
			case w.c <- struct{}{}:
			default:
			}
		}
		l.mu.Unlock()
	}
}
