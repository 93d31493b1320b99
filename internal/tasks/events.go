package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// emit numbers and stores events of the task, linked to its sandbox, and
// wakes its followers. A failed write is logged: the task goes on.
func (s *Service) emit(taskID, sandboxID string, evs ...Event) {
	s.appendEvents(taskID, sandboxID, true, evs)
}

// emitLive is emit for events from outside the harness's output, which a
// resumed task does not make again (usage.go's live).
func (s *Service) emitLive(taskID, sandboxID string, evs ...Event) {
	s.appendEvents(taskID, sandboxID, false, evs)
}

func (s *Service) appendEvents(taskID, sandboxID string, remade bool, evs []Event) {
	if len(evs) == 0 {
		return
	}
	now := s.opts.Now().UTC()
	rows := make([]taskrec.Event, 0, len(evs))
	for _, e := range evs {
		e.Seq, e.Time, e.SandboxID = 0, time.Time{}, ""
		e.clip()
		data, err := json.Marshal(e)
		if err != nil {
			s.log.Error("task: encode event", "task", taskID, "type", e.Type, "err", err)
			continue
		}
		rows = append(rows, taskrec.Event{Time: now, Type: e.Type, SandboxID: sandboxID, Data: data})
	}
	s.mu.Lock()
	if l := s.logs[taskID]; l != nil && l.skip > 0 && remade {
		// A task resumed by a later daemon makes again the events its
		// phase had stored before the restart: they are not stored twice.
		n := min(l.skip, len(rows))
		l.skip -= n
		rows = rows[n:]
	}
	s.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	if err := s.st.AppendTaskEvents(context.Background(), taskID, rows); err != nil {
		s.log.Error("task: store events", "task", taskID, "sandbox", sandboxID, "err", err)
		return
	}
	s.mu.Lock()
	if l := s.logs[taskID]; l != nil {
		l.seq = rows[len(rows)-1].Seq
	}
	if ch := s.wake[taskID]; ch != nil {
		close(ch)
		delete(s.wake, taskID)
	}
	s.mu.Unlock()
}

// waitCh is closed at the task's next event.
func (s *Service) waitCh(taskID string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.wake[taskID]
	if ch == nil {
		ch = make(chan struct{})
		s.wake[taskID] = ch
	}
	return ch
}

func toEvent(r taskrec.Event) (Event, error) {
	var e Event
	if err := json.Unmarshal(r.Data, &e); err != nil {
		return Event{}, fmt.Errorf("task %s event %d: %w", r.TaskID, r.Seq, err)
	}
	e.Seq, e.Time, e.Type, e.SandboxID = r.Seq, r.Time, r.Type, r.SandboxID
	return e, nil
}

// Events returns up to limit of the caller's task's events after the
// sequence number after.
func (s *Service) Events(ctx context.Context, c sandbox.Caller, id string, after int64, limit int) ([]Event, error) {
	if _, err := s.own(ctx, c, id); err != nil {
		return nil, err
	}
	return s.events(ctx, id, after, limit)
}

func (s *Service) events(ctx context.Context, id string, after int64, limit int) ([]Event, error) {
	rows, err := s.st.TaskEvents(ctx, id, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(rows))
	for _, r := range rows {
		e, err := toEvent(r)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Follow sends the caller's task's events after the sequence number
// after to out as they come, and returns after task.finished (or when ctx
// ends or out fails). ready is called once the task is known to be the
// caller's, before the first event.
func (s *Service) Follow(ctx context.Context, c sandbox.Caller, id string, after int64, ready func(), out func(Event) error) error {
	if _, err := s.own(ctx, c, id); err != nil {
		return err
	}
	ready()
	for {
		// Taken before the read, so an event stored after the read still
		// wakes us.
		wake := s.waitCh(id)
		evs, err := s.events(ctx, id, after, 500)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := out(e); err != nil {
				return err
			}
			after = e.Seq
			if e.Type == EventFinished {
				// No event follows this one: nobody can be waiting on a
				// channel taken after it was stored, so drop ours.
				s.mu.Lock()
				if s.wake[id] == wake {
					delete(s.wake, id)
				}
				s.mu.Unlock()
				return nil
			}
		}
		if len(evs) == 500 {
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.streamsEnd:
			return fmt.Errorf("%w: the server is shutting down; follow the task again from event %d", sandbox.ErrUnavailable, after)
		}
	}
}
